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
    /// Set once URLSession stops this request (a cancelled task): its client must not be called
    /// after that (FoundationNetworking traps, "a task that is not in the registry").
    fileprivate let stopped = StopFlag()
    /// Where requests are forwarded (blocking sockets, off URLSession's queues: calling back into
    /// URLSession from its own queues deadlocks swift-corelibs-foundation).
    private static let forwarding = DispatchQueue(label: "fault-injecting-url-protocol", attributes: .concurrent)

    override class func canInit(with request: URLRequest) -> Bool {
        request.url?.host?.hasSuffix(".fault.test") ?? false
    }

    override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    override func startLoading() {
        let loader = UncheckedReference(self)
        guard let url = request.url, let host = url.host, let port = url.port else {
            Self.forwarding.async { loader.fail(URLError(.badURL)) }
            return
        }
        let fault = FaultPlans.decide(device: String(host.prefix { $0 != "." }))
        if fault == .hang { return }  // until the client cancels
        var body = request.httpBody ?? Data()
        if request.httpBody == nil, let stream = request.httpBodyStream { body = Self.read(stream) }
        var target = url.path.isEmpty ? "/" : url.path
        if let query = url.query { target += "?" + query }
        var head = "\(request.httpMethod ?? "GET") \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in request.allHTTPHeaderFields ?? [:] where name.lowercased() != "host" && name.lowercased() != "content-length" {
            head += "\(name): \(value)\r\n"
        }
        head += "Content-Length: \(body.count)\r\n\r\n"
        let bytes = Array(head.utf8) + Array(body)
        let sentBody = body
        let method = request.httpMethod ?? "GET"
        Self.forwarding.async {
            switch fault {
            case .failBeforeSending:
                loader.fail(URLError(.notConnectedToInternet))
                return
            case .systemCancelled:
                loader.fail(URLError(.cancelled))
                return
            case .timeoutBeforeSending:
                Thread.sleep(forTimeInterval: 0.02)
                loader.fail(URLError(.timedOut))
                return
            case .answerBeforeSending(let status, let retryAfter):
                loader.finish(Self.injectedError(url, status: status, retryAfter: retryAfter), Self.injectedBody(status: status))
                return
            default:
                break
            }
            if case .delayed(let milliseconds) = fault { Thread.sleep(forTimeInterval: Double(milliseconds) / 1000) }
            let raw: RawHTTPResponse
            let isPush = method == "POST" && url.path == "/v1/sync/push"
            do {
                // Pushes reach the server one at a time, so the observer knows their order.
                if isPush { PushObserver.lock.lock() }
                defer { if isPush { PushObserver.lock.unlock() } }
                let connection = try RawHTTPClient(port: port)
                defer { connection.close() }
                let sent = Date()
                try connection.send(bytes)
                raw = try connection.readResponse(timeout: .seconds(30), isResponseToHead: method == "HEAD")
                if isPush && raw.status == 200 {
                    PushObserver.record(
                        device: String(host.prefix { $0 != "." }), request: sentBody, response: Data(raw.body), sent: sent, received: Date())
                }
            } catch {
                loader.fail(URLError(.cannotConnectToHost))
                return
            }
            switch fault {
            case .dropAnswer:
                loader.fail(URLError(.networkConnectionLost))
                return
            case .timeoutAfterApplying:
                loader.fail(URLError(.timedOut))
                return
            case .answerAfterApplying(let status):
                loader.finish(Self.injectedError(url, status: status, retryAfter: nil), Self.injectedBody(status: status))
                return
            default:
                break
            }
            var headers: [String: String] = [:]
            for field in raw.headers { headers[field.name] = field.value }
            guard let response = HTTPURLResponse(url: url, statusCode: raw.status, httpVersion: "HTTP/1.1", headerFields: headers) else {
                loader.fail(URLError(.badServerResponse))
                return
            }
            loader.finish(response, Data(raw.body))
        }
    }

    override func stopLoading() { stopped.set() }

    /// The head of an error answer the server never gave.
    private static func injectedError(_ url: URL, status: Int, retryAfter: Int?) -> HTTPURLResponse {
        var headers = ["Content-Type": "application/json; charset=utf-8", "X-Request-Id": "injected"]
        if let retryAfter { headers["Retry-After"] = String(retryAfter) }
        // safe because: the status and headers are valid
        return HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: headers)!
    }

    /// The API's error body for an injected status (S001, S002 or S003).
    private static func injectedBody(status: Int) -> Data {
        let codes = [400: "E001", 413: "E010", 429: "S001", 503: "S003"]
        let code = codes[status] ?? "S002"
        return Data(#"{"error":{"code":"\#(code)","message":"injected by the test network"}}"#.utf8)
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

    func fail(_ error: URLError) {
        guard !value.stopped.isSet else { return }
        value.client?.urlProtocol(value, didFailWithError: error)
    }

    func finish(_ response: HTTPURLResponse, _ body: Data) {
        guard !value.stopped.isSet else { return }
        value.client?.urlProtocol(value, didReceive: response, cacheStoragePolicy: .notAllowed)
        value.client?.urlProtocol(value, didLoad: body)
        value.client?.urlProtocolDidFinishLoading(value)
    }
}

/// A flag set once, read from any thread.
private final class StopFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false

    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}

/// What happens to one request.
enum Fault: Sendable, Equatable {
    case none
    case failBeforeSending
    case dropAnswer
    /// Never answer (until the request is cancelled).
    case hang
    /// Send it after this many milliseconds.
    case delayed(Int)
    /// Time out before the request reaches the server.
    case timeoutBeforeSending
    /// The system cancels the request before it reaches the server (`URLError.cancelled`, -999:
    /// iOS does so on network changes and backgrounding), the app not having asked for it.
    case systemCancelled
    /// The server applies the request, then the client times out waiting for the answer.
    case timeoutAfterApplying
    /// An error answer (500, 503, 429) in place of the server's, which never sees the request.
    case answerBeforeSending(status: Int, retryAfter: Int?)
    /// The server applies the request, but the client gets an error answer (500) instead of its.
    case answerAfterApplying(status: Int)

    /// Every kind of failure, as the model-based history test draws them.
    static let everyKind: [Fault] = [
        .failBeforeSending, .dropAnswer, .timeoutBeforeSending, .timeoutAfterApplying,
        .answerBeforeSending(status: 500, retryAfter: nil), .answerAfterApplying(status: 500),
        .answerBeforeSending(status: 503, retryAfter: 0), .answerBeforeSending(status: 503, retryAfter: 1),
        .answerBeforeSending(status: 429, retryAfter: 0), .answerBeforeSending(status: 429, retryAfter: 1),
    ]

    /// Whether the server never saw the request.
    var isBeforeSending: Bool {
        switch self {
        case .failBeforeSending, .timeoutBeforeSending, .systemCancelled, .answerBeforeSending: return true
        default: return false
        }
    }
}

/// Per-device failure rates, drawn from a seeded generator (the draws' order depends on the
/// interleaving of the devices, so a seed fixes the scenario and the rates, not every failure).
final class FaultPlans: Sendable {
    struct Plan: Sendable {
        var hang = false
        /// Faults for the next requests, in order, before the random ones.
        var script: [Fault] = []
        var failureRate: Double
        /// The failures drawn from, uniformly.
        var kinds: [Fault] = [.failBeforeSending, .dropAnswer]
        var generator: SeededGenerator
        var failures = 0
        var dropped = 0
        var requests = 0
    }

    private static let plans = Mutex<[String: Plan]>([:])

    /// Sets `device`'s failure rate (0 passes everything); each failure is one of `kinds` (by
    /// default: half fail before sending, half drop the answer).
    static func set(device: String, failureRate: Double, seed: UInt64, kinds: [Fault] = [.failBeforeSending, .dropAnswer]) {
        plans.withLock { plans in
            var plan = plans[device] ?? Plan(failureRate: failureRate, generator: SeededGenerator(seed: seed))
            plan.failureRate = failureRate
            plan.kinds = kinds
            plans[device] = plan
        }
    }

    /// The faults of `device`'s next requests, in order.
    static func script(device: String, _ faults: [Fault]) {
        plans.withLock { plans in
            var plan = plans[device] ?? Plan(failureRate: 0, generator: SeededGenerator(seed: 1))
            plan.script = faults
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
            if !plan.script.isEmpty {
                let fault = plan.script.removeFirst()
                if fault != .none { plan.failures += 1 }
                plans[device] = plan
                return fault
            }
            var fault = Fault.none
            if plan.failureRate > 0, Double.random(in: 0..<1, using: &plan.generator) < plan.failureRate {
                fault = plan.kinds.randomElement(using: &plan.generator) ?? .none
                plan.failures += 1
                if !fault.isBeforeSending { plan.dropped += 1 }
            }
            plans[device] = plan
            return fault
        }
    }

    /// (requests, failures injected, of which answers dropped) of `device`.
    static func counts(device: String) -> (requests: Int, failures: Int, dropped: Int) {
        plans.withLock { plans in (plans[device]?.requests ?? 0, plans[device]?.failures ?? 0, plans[device]?.dropped ?? 0) }
    }

    static func remove(device: String) {
        _ = plans.withLock { $0.removeValue(forKey: device) }
    }
}
