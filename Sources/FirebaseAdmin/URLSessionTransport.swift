import Dispatch
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The production `HTTPTransport`: Foundation's URLSession, made blocking with a semaphore.
public struct URLSessionTransport: HTTPTransport {
    /// Default per-request timeout in seconds (10 s).
    public var timeout: Double
    private let session: URLSession

    /// A transport with its own ephemeral, cache-less session.
    public init(timeout: Double = 10) {
        self.timeout = timeout
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.timeoutIntervalForRequest = timeout
        configuration.timeoutIntervalForResource = timeout * 2
        session = URLSession(configuration: configuration)
    }

    /// Sends the request and blocks until its response, failure or timeout.
    public func send(_ request: TransportRequest) throws -> TransportResponse {
        guard let url = URL(string: request.url) else { throw TransportError("invalid URL") }
        let requestTimeout = request.timeout ?? timeout
        var urlRequest = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: requestTimeout)
        urlRequest.httpMethod = request.method
        for (name, value) in request.headers { urlRequest.addValue(value, forHTTPHeaderField: name) }
        if !request.body.isEmpty { urlRequest.httpBody = Data(request.body) }

        let outcome = Outcome()
        let done = DispatchSemaphore(value: 0)
        let task = session.dataTask(with: urlRequest) { data, response, error in
            let result: Result<TransportResponse, TransportError>
            if let error {
                let isTimeout = (error as? URLError)?.code == .timedOut
                result = .failure(TransportError(error.localizedDescription, isTimeout: isTimeout))
            } else if let http = response as? HTTPURLResponse {
                var headers: [(String, String)] = []
                for (name, value) in http.allHeaderFields {
                    headers.append((String(describing: name), String(describing: value)))
                }
                result = .success(TransportResponse(status: http.statusCode, headers: headers, body: Array(data ?? Data())))
            } else {
                result = .failure(TransportError("response is not HTTP"))
            }
            outcome.result.withLock { $0 = result }
            done.signal()
        }
        task.resume()
        // URLSession enforces the timeout; this upper bound only guards against a lost callback.
        if done.wait(timeout: .now() + requestTimeout + 5) == .timedOut {
            task.cancel()
            throw TransportError("request timed out", isTimeout: true)
        }
        guard let result = outcome.result.withLock({ $0 }) else { throw TransportError("request finished without a result") }
        return try result.get()
    }
}

/// Carries the completion handler's result to the waiting thread.
private final class Outcome: Sendable {
    let result = Mutex<Result<TransportResponse, TransportError>?>(nil)
}
