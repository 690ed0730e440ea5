import Foundation
import Synchronization
import TestSupport

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A network that fails on purpose. Requests to `http://<device>.fault.test:<port>/...` are
/// forwarded to `127.0.0.1:<port>`; each device's ``FaultPlan`` decides, per request, to pass it,
/// fail it before it is sent (the server never sees it), or drop the answer after the server
/// applied it (the client must replay).
final class FaultInjectingURLProtocol: URLProtocol {
    // Set once in startLoading and read in stopLoading; URLProtocol calls them in turn.
    private var forwardedTask: URLSessionDataTask?

    /// Plain session the real requests go through.
    private static let forwarding: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        return URLSession(configuration: configuration)
    }()

    override class func canInit(with request: URLRequest) -> Bool {
        request.url?.host?.hasSuffix(".fault.test") ?? false
    }

    override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    override func startLoading() {
        guard let url = request.url, let host = url.host, var components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        else {
            client?.urlProtocol(self, didFailWithError: URLError(.badURL))
            return
        }
        let fault = FaultPlans.decide(device: String(host.prefix { $0 != "." }))
        if fault == .hang { return }  // until stopLoading (the client cancels)
        if fault == .failBeforeSending {
            client?.urlProtocol(self, didFailWithError: URLError(.notConnectedToInternet))
            return
        }
        components.host = "127.0.0.1"
        var forwarded = request
        forwarded.url = components.url
        if forwarded.httpBody == nil, let stream = request.httpBodyStream {
            forwarded.httpBody = Self.read(stream)
        }
        let reference = UncheckedReference(self)
        let task = Self.forwarding.dataTask(with: forwarded) { data, response, error in
            let loader = reference.value
            if let error {
                loader.client?.urlProtocol(loader, didFailWithError: error)
            } else if fault == .dropAnswer {
                loader.client?.urlProtocol(loader, didFailWithError: URLError(.networkConnectionLost))
            } else if let response {
                loader.client?.urlProtocol(loader, didReceive: response, cacheStoragePolicy: .notAllowed)
                loader.client?.urlProtocol(loader, didLoad: data ?? Data())
                loader.client?.urlProtocolDidFinishLoading(loader)
            } else {
                loader.client?.urlProtocol(loader, didFailWithError: URLError(.badServerResponse))
            }
        }
        forwardedTask = task
        task.resume()
    }

    override func stopLoading() {
        forwardedTask?.cancel()
    }

    private static func read(_ stream: InputStream) -> Data {
        var data = Data()
        stream.open()
        defer { stream.close() }
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while stream.hasBytesAvailable {
            let count = stream.read(&buffer, maxLength: buffer.count)
            if count <= 0 { break }
            data.append(buffer, count: count)
        }
        return data
    }

    /// A URLSession whose requests go through this protocol.
    static func session() -> URLSession {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.protocolClasses = [FaultInjectingURLProtocol.self]
        return URLSession(configuration: configuration)
    }
}

/// Carries the protocol object into the forwarding task's completion handler: URLProtocol is not
/// Sendable, but its client may be called from any thread.
private final class UncheckedReference: @unchecked Sendable {
    let value: FaultInjectingURLProtocol
    init(_ value: FaultInjectingURLProtocol) { self.value = value }
}

/// What happens to one request.
enum Fault: Sendable, Equatable {
    case none
    case failBeforeSending
    case dropAnswer
    /// Never answer (until the request is cancelled).
    case hang
}

/// Per-device failure rates, drawn from a seeded generator (the draws' order depends on the
/// interleaving of the devices, so a seed fixes the scenario and the rates, not every failure).
final class FaultPlans: Sendable {
    struct Plan: Sendable {
        var hang = false
        var failureRate: Double
        var generator: SeededGenerator
        var failures = 0
        var requests = 0
    }

    private static let plans = Mutex<[String: Plan]>([:])

    /// Sets `device`'s failure rate (0 passes everything); half the failures drop the answer.
    static func set(device: String, failureRate: Double, seed: UInt64) {
        plans.withLock { plans in
            var plan = plans[device] ?? Plan(failureRate: failureRate, generator: SeededGenerator(seed: seed))
            plan.failureRate = failureRate
            plans[device] = plan
        }
    }

    /// Makes every request of `device` hang.
    static func hang(device: String) {
        plans.withLock { plans in
            var plan = plans[device] ?? Plan(failureRate: 0, generator: SeededGenerator(seed: 1))
            plan.hang = true
            plans[device] = plan
        }
    }

    static func decide(device: String) -> Fault {
        plans.withLock { plans in
            guard var plan = plans[device] else { return .none }
            plan.requests += 1
            if plan.hang {
                plans[device] = plan
                return .hang
            }
            var fault = Fault.none
            if plan.failureRate > 0, Double.random(in: 0..<1, using: &plan.generator) < plan.failureRate {
                fault = Bool.random(using: &plan.generator) ? .failBeforeSending : .dropAnswer
                plan.failures += 1
            }
            plans[device] = plan
            return fault
        }
    }

    /// (requests, failures injected) of `device`.
    static func counts(device: String) -> (requests: Int, failures: Int) {
        plans.withLock { plans in (plans[device]?.requests ?? 0, plans[device]?.failures ?? 0) }
    }

    static func remove(device: String) {
        _ = plans.withLock { $0.removeValue(forKey: device) }
    }
}
