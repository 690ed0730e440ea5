import Foundation
import JSON
import LocifyAPI
import LocifyServer
import Logging
import Synchronization
import Testing
import TestSupport
import TestSupportServer

/// Collects the lines a `JSONLogHandler` writes.
private final class LogLines: Sendable {
    private let lines = Mutex<[String]>([])

    var logger: Logger {
        Logger(label: "locify-test") { [self] label in
            JSONLogHandler(label: label, level: .info) { bytes in
                self.lines.withLock { $0.append(String(decoding: bytes, as: UTF8.self)) }
            }
        }
    }

    var all: [String] { lines.withLock { $0 } }

    /// The request log line of `requestID`, parsed, waiting up to 10 s for it (the line is
    /// written just after the response is handed to the connection).
    func requestLine(_ requestID: String) throws -> JSONObject? {
        let deadline = ContinuousClock.now + .seconds(10)
        repeat {
            for line in all {
                guard let object = try JSONParser.parse(Array(line.utf8)).objectValue else { continue }
                if object["msg"] == "request", object["request_id"]?.stringValue == requestID { return object }
            }
            Thread.sleep(forTimeInterval: 0.02)
        } while ContinuousClock.now < deadline
        return nil
    }
}

/// Request-level rules every endpoint shares (openapi.yaml): `X-Request-Id`,
/// routing before authentication, HEAD, and the JSON request log line.
@Suite("Operations: request ids, routing before auth, HEAD and request logs")
struct OperationsRequestTests {
    @Test("a sane client X-Request-Id (1-128 of [A-Za-z0-9._:-]) is echoed")
    func echoesSaneRequestID() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let longest = String(repeating: "a", count: 128)
        for id in ["abc", "A-Z.a_z:0-9", longest, "7"] {
            let response = try server.request("GET", "/health", headers: [("X-Request-Id", id)])
            #expect(response.headers["X-Request-Id"] == id)
        }
    }

    @Test("an insane client X-Request-Id is replaced by a fresh one")
    func replacesInsaneRequestID() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let tooLong = String(repeating: "a", count: 129)
        var seen = Set<String>()
        for id in [tooLong, "has space", "slash/es", "quote\"", "é", "semi;colon", ""] {
            let response = try server.request("GET", "/health", headers: [("X-Request-Id", id)])
            let replaced = try #require(response.headers["X-Request-Id"])
            #expect(replaced != id)
            #expect(Self.isSane(replaced))
            seen.insert(replaced)
        }
        #expect(seen.count == 7, "every generated id is new")
    }

    @Test("every response carries X-Request-Id: errors, HEAD, and errors the HTTP layer answers")
    func requestIDEverywhere() throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let token = try server.token(for: "ops-request-id")
        let responses = [
            try server.request("GET", "/v1/categories"),
            try server.request("GET", "/v1/categories", token: token),
            try server.request("GET", "/nope"),
            try server.request("DELETE", "/health"),
            try server.request("HEAD", "/health"),
            try server.request("POST", "/v1/categories", token: token, body: Array("x".utf8), headers: [("Content-Type", "text/plain")]),
        ]
        for response in responses {
            #expect(response.headers["X-Request-Id"].map(Self.isSane) == true, "status \(response.status)")
        }
        // A body over 2 MiB is refused by the HTTP layer before any handler runs.
        let client = try RawHTTPClient(port: server.port)
        defer { client.close() }
        try client.send("POST /v1/categories HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 3000000\r\n\r\n")
        let tooLarge = try client.readResponse()
        #expect(tooLarge.status == 413)
        #expect(tooLarge.headers["X-Request-Id"].map(Self.isSane) == true)
        #expect(TestResponse.errorCode(of: tooLarge.body) == "E010")
        // Malformed HTTP gets a plain-text 400, still with a request id.
        let garbage = try RawHTTPClient(port: server.port)
        defer { garbage.close() }
        try garbage.send("NOT HTTP AT ALL\r\n\r\n")
        let malformed = try garbage.readResponse()
        #expect(malformed.status == 400)
        #expect(malformed.headers["X-Request-Id"].map(Self.isSane) == true)
    }

    @Test("an unknown path is 404 E007 with or without a token, before authentication")
    func notFoundBeforeAuth() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let valid = try server.token(for: "ops-routing")
        for token in [nil, "garbage", valid] {
            for path in ["/v1/nope", "/v1/categories/", "/v1/categories/x/y", "/v2/categories", "/"] {
                let response = try server.request("GET", path, token: token)
                #expect(response.status == 404, "\(path)")
                #expect(response.errorCode == "E007", "\(path)")
                #expect(response.headers["WWW-Authenticate"] == nil)
            }
        }
    }

    @Test("a method the path does not support is 405 E011 with Allow, with or without a token")
    func methodNotAllowedBeforeAuth() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let valid = try server.token(for: "ops-routing")
        let cases: [(method: String, path: String, allow: String)] = [
            ("PATCH", "/v1/categories", "GET, HEAD, POST, PUT"),
            ("DELETE", "/v1/categories", "GET, HEAD, POST, PUT"),
            ("POST", "/v1/locations/\(UUID().uuidString)", "DELETE, GET, HEAD, PATCH, PUT"),
            ("GET", "/v1/sync/push", "POST"),
            ("POST", "/v1/sync/changes", "GET, HEAD"),
            ("PATCH", "/v1/users/me", "DELETE, GET, HEAD, PUT"),
            ("POST", "/health", "GET, HEAD"),
            ("OPTIONS", "/metrics", "GET, HEAD"),
            ("TRACE", "/openapi.yaml", "GET, HEAD"),
        ]
        for token in [nil, "garbage", valid] {
            for (method, path, allow) in cases {
                let response = try server.request(method, path, token: token)
                #expect(response.status == 405, "\(method) \(path)")
                #expect(response.errorCode == "E011", "\(method) \(path)")
                #expect(response.headers["Allow"] == allow, "\(method) \(path)")
            }
        }
    }

    @Test("HEAD answers every GET route with the GET's status and headers and no body")
    func head() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let token = try server.token(for: "ops-head")
        for (path, auth) in [("/health", nil), ("/metrics", nil), ("/openapi.yaml", nil), ("/v1/categories", token), ("/v1/info", token)] {
            let get = try server.request("GET", path, token: auth)
            let head = try server.request("HEAD", path, token: auth)
            #expect(head.status == 200, "\(path)")
            #expect(head.body.isEmpty, "\(path)")
            #expect(head.headers["Content-Type"] == get.headers["Content-Type"], "\(path)")
            if path != "/metrics" {
                #expect(head.headers["Content-Length"] == get.headers["Content-Length"], "\(path)")
            }
        }
        // HEAD goes through authentication like GET.
        let refused = try server.request("HEAD", "/v1/categories")
        #expect(refused.status == 401)
        #expect(refused.body.isEmpty)
        #expect(try server.request("HEAD", "/v1/sync/push", token: token).status == 405)
    }

    @Test("each request writes one JSON log line: ts, level, msg, request_id, method, route, status, duration_ms, user_id")
    func requestLogLine() throws {
        let logs = LogLines()
        let server = try TestServer.start(.inProcess, logger: logs.logger)
        defer { server.stop() }
        let token = try server.token(for: "ops-logger")
        let id = UUID()
        _ = try server.request("GET", "/v1/categories/\(id)", token: token, headers: [("X-Request-Id", "log-line-1")])
        let line = try #require(try logs.requestLine("log-line-1"))
        #expect(line["level"] == "info")
        #expect(line["method"] == "GET")
        #expect(line["route"] == "/v1/categories/{id}")
        #expect(line["status"] == 404)
        #expect(line["user_id"] == "ops-logger")
        let ts = try #require(line["ts"]?.stringValue)
        #expect(ts.wholeMatch(of: /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/) != nil)
        let duration = try #require(line["duration_ms"]?.numberValue)
        #expect(duration >= 0)
        for field in ["ts", "level", "msg", "request_id", "method", "route", "status", "duration_ms", "user_id"] {
            #expect(line[field] != nil, "\(field)")
        }
        // No token in the log, ever.
        #expect(!logs.all.contains { $0.contains(token) })
    }

    @Test("requests without a user or a route are logged too")
    func anonymousLogLines() throws {
        let logs = LogLines()
        let server = try TestServer.start(.inProcess, logger: logs.logger)
        defer { server.stop() }
        _ = try server.request("GET", "/v1/categories", headers: [("X-Request-Id", "log-anonymous")])
        _ = try server.request("GET", "/no/such/thing", headers: [("X-Request-Id", "log-unmatched")])
        let anonymous = try #require(try logs.requestLine("log-anonymous"))
        #expect(anonymous["status"] == 401)
        #expect(anonymous["route"] == "/v1/categories")
        #expect(anonymous["user_id"] == "")
        let unmatched = try #require(try logs.requestLine("log-unmatched"))
        #expect(unmatched["status"] == 404)
        #expect(unmatched["route"] == "unmatched")
    }

    private static func isSane(_ id: String) -> Bool {
        id.wholeMatch(of: /[A-Za-z0-9._:\-]{1,128}/) != nil
    }
}

extension TestResponse {
    /// `error.code` of a raw JSON error body.
    fileprivate static func errorCode(of body: [UInt8]) -> String? {
        (try? JSONParser.parse(body))?.objectValue?["error"]?.objectValue?["code"]?.stringValue
    }
}
