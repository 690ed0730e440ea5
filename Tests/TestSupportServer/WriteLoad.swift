import Foundation
import HTTPServer
import JSON
import Synchronization
import TestSupport

/// A closed-loop write load for fault tests: one thread per token, each on its own keep-alive
/// connection (reopened when the server closes it or it breaks), sending category creates and,
/// every fourth request, a push of three category creates, as fast as the server answers. The
/// fate of every request is recorded, with the ids a 2xx acknowledged, so a test can check that
/// every acknowledged write is stored afterwards.
public final class WriteLoad: Sendable {
    /// What happened to one request.
    public struct Outcome: Sendable {
        /// Which request kind was sent.
        public enum Kind: String, Sendable {
            case create
            case push
        }

        /// The `X-Request-Id` sent (`<writer>-<sequence>-<random>`), to find the request in server logs.
        public var requestID: String
        /// Which writer sent it.
        public var writer: Int
        /// What kind of write it was.
        public var kind: Kind
        /// The response status; nil when no complete response arrived.
        public var status: Int?
        /// `error.code` of an error body.
        public var errorCode: String?
        /// The `Retry-After` header.
        public var retryAfter: String?
        /// The category ids a 2xx acknowledged (for a push, the changes reported `applied`).
        public var acknowledged: [String]
        /// Why no response arrived (send failed, connection closed or reset, timeout).
        public var transportError: String?
        /// Whether the request was fully sent before the failure (false: it failed while sending).
        public var sent: Bool
    }

    private struct State: Sendable {
        var outcomes: [Outcome] = []
        var acknowledged = 0
        var stopping = false
    }

    private let port: Int
    private let tokens: [String]
    private let responseTimeout: Duration
    private let state = Mutex(State())
    private let finished = DispatchGroup()

    /// A load of `tokens.count` writers against `127.0.0.1:<port>`; a response slower than
    /// `responseTimeout` counts as a transport error (a hang).
    public init(port: Int, tokens: [String], responseTimeout: Duration = .seconds(30)) {
        self.port = port
        self.tokens = tokens
        self.responseTimeout = responseTimeout
    }

    /// Starts the writer threads.
    public func start() {
        for writer in tokens.indices {
            finished.enter()
            let thread = Thread { [self] in
                run(writer: writer)
                finished.leave()
            }
            thread.name = "write-load-\(writer)"
            thread.start()
        }
    }

    /// Stops the writers (each finishes its request in flight) and returns every outcome.
    @discardableResult
    public func stop() -> [Outcome] {
        state.withLock { $0.stopping = true }
        finished.wait()
        return outcomes
    }

    /// Every outcome so far.
    public var outcomes: [Outcome] { state.withLock { $0.outcomes } }

    /// How many writes have been acknowledged so far.
    public var acknowledgedCount: Int { state.withLock { $0.acknowledged } }

    /// Waits until `count` more writes than now have been acknowledged (the server makes
    /// progress), or `timeout` passes; returns whether it happened.
    public func waitForProgress(_ count: Int, timeout: Duration = .seconds(60)) -> Bool {
        let target = acknowledgedCount + count
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if acknowledgedCount >= target { return true }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return acknowledgedCount >= target
    }

    private func run(writer: Int) {
        var client: RawHTTPClient?
        var sequence = 0
        while !state.withLock({ $0.stopping }) {
            sequence += 1
            let kind: Outcome.Kind = sequence % 4 == 0 ? .push : .create
            let requestID = "\(writer)-\(sequence)-\(UInt32.random(in: 0...UInt32.max))"
            let ids = (0..<(kind == .push ? 3 : 1)).map { _ in UUID().uuidString.lowercased() }
            var outcome = Outcome(
                requestID: requestID, writer: writer, kind: kind, status: nil, errorCode: nil, retryAfter: nil,
                acknowledged: [], transportError: nil, sent: false)
            do {
                let connection = try client ?? RawHTTPClient(port: port)
                client = connection
                try connection.send(request(kind: kind, ids: ids, token: tokens[writer], requestID: requestID))
                outcome.sent = true
                let response = try connection.readResponse(timeout: responseTimeout)
                outcome.status = response.status
                let body = (try? JSONParser.parse(response.body))?.objectValue
                outcome.errorCode = body?["error"]?.objectValue?["code"]?.stringValue
                outcome.retryAfter = response.headers["Retry-After"]
                switch (kind, response.status) {
                case (.create, 201):
                    outcome.acknowledged = ids
                case (.push, 200):
                    let results = body?["results"]?.arrayValue ?? []
                    outcome.acknowledged = zip(ids, results).compactMap { id, result in
                        result.objectValue?["status"]?.stringValue == "applied" ? id : nil
                    }
                default:
                    break
                }
                if response.headers.containsToken("close", in: "Connection") {
                    connection.close()
                    client = nil
                }
            } catch {
                outcome.transportError = "\(error)"
                client?.close()
                client = nil
                Thread.sleep(forTimeInterval: 0.02)
            }
            let acknowledged = outcome.acknowledged.count
            state.withLock {
                $0.outcomes.append(outcome)
                $0.acknowledged += acknowledged
            }
        }
        client?.close()
    }

    private func request(kind: Outcome.Kind, ids: [String], token: String, requestID: String) -> [UInt8] {
        let body: JSONValue
        let path: String
        switch kind {
        case .create:
            path = "/v1/categories"
            body = ["id": .string(ids[0]), "name": .string("load \(ids[0].prefix(8))")]
        case .push:
            path = "/v1/sync/push"
            body = [
                "changes": .array(
                    ids.map { id in
                        ["type": "category", "action": "create", "data": ["id": .string(id), "name": .string("pushed \(id.prefix(8))")]]
                    })
            ]
        }
        let payload = JSONWriter.encode(body)
        let head =
            "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAuthorization: Bearer \(token)\r\n"
            + "X-Request-Id: \(requestID)\r\nContent-Type: application/json\r\nContent-Length: \(payload.count)\r\n\r\n"
        return Array(head.utf8) + payload
    }
}

extension [WriteLoad.Outcome] {
    /// Every id a 2xx acknowledged.
    public var acknowledgedIDs: Set<String> { Set(flatMap(\.acknowledged)) }

    /// How many responses had `status`.
    public func count(status: Int) -> Int { filter { $0.status == status }.count }

    /// The outcomes that got no complete response.
    public var transportFailures: [WriteLoad.Outcome] { filter { $0.transportError != nil } }
}
