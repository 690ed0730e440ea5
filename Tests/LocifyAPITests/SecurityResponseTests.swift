import Foundation
import JSON
import Postgres
import Testing
import TestSupport
import TestSupportServer

/// OWASP API8 (security misconfiguration) as it applies to responses: an unexpected failure is
/// a generic 500 S002 (no SQL, no stack, no internals; details only in the log, under the
/// request id), credentials are never echoed, client request ids are echoed only when sane, and
/// every response tells clients and proxies not to sniff or cache it.
@Suite("Security: what responses reveal")
struct SecurityResponseTests {
    @Test("an unexpected database failure is a generic 500 S002; the details go to the log with the request id")
    func genericServerError() throws {
        let log = CapturedLog()
        let server = try TestServer.start(.inProcess, logger: log.logger)
        defer { server.stop() }
        let token = try server.token(for: "broken-" + newID().prefix(8))
        #expect(try server.request("GET", "/v1/categories", token: token).status == 200)
        try server.pool.withConnection { connection in
            try connection.execute(unsafeSQL: "ALTER TABLE categories RENAME COLUMN name TO name_hidden_by_test")
        }
        let response = try server.request("GET", "/v1/categories", token: token, headers: [("X-Request-Id", "trace-500")])
        #expect(response.status == 500)
        #expect(response.json == ["error": ["code": "S002", "message": "unexpected server error"]], "\(response.text)")
        for leak in ["name_hidden", "column", "SELECT", "categories", "Postgres", "SQLSTATE", "42703", ".swift", "Error("] {
            #expect(!response.text.contains(leak), "the 500 body reveals \(leak)")
        }
        #expect(response.headers["X-Request-Id"] == "trace-500")
        let logged = log.messages(containing: "unexpected error").filter { $0.metadata["request_id"] == "trace-500" }
        #expect(logged.count == 1)
        #expect(logged.first?.metadata["error"]?.contains("42703") == true, "the log keeps the details")
    }

    @Test("tokens are never echoed: not in 401 bodies or headers, not in other errors, not in the log")
    func tokensNeverEchoed() throws {
        let log = CapturedLog()
        let server = try TestServer.start(.inProcess, logger: log.logger)
        defer { server.stop() }
        let valid = try server.token(for: "echo-" + newID().prefix(8))
        let forged = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZG1pbiJ9.c2VjcmV0LXNpZ25hdHVyZQ"
        let responses = [
            try server.request("GET", "/v1/users/me", token: forged),
            try server.request("GET", "/v1/users/me", headers: [("Authorization", "Basic \(forged)")]),
            try server.request("GET", "/v1/categories/not-a-uuid", token: valid),
            try server.request("POST", "/v1/categories", token: valid, body: Array("{bad".utf8), headers: [("Content-Type", "application/json")]),
            try server.request("GET", "/v1/nowhere", token: valid),
        ]
        #expect(responses.map(\.status) == [401, 401, 400, 400, 404])
        for response in responses {
            let everything = response.text + response.headers.map { "\($0.name): \($0.value)" }.joined()
            #expect(!everything.contains(forged) && !everything.contains(valid))
            #expect(!everything.contains("c2VjcmV0") && !everything.contains("eyJ"))
        }
        for entry in log.all {
            let line = entry.message + entry.metadata.values.joined()
            #expect(!line.contains(forged) && !line.contains(valid), "logged a token: \(entry.message)")
        }
    }

    @Test("a client X-Request-Id is echoed only when it is 1-128 characters of [A-Za-z0-9._:-]")
    func requestIDs() throws {
        let server = try SharedServer.get()
        let sane = "abc-123_X.y:z"
        #expect(try server.request("GET", "/health", headers: [("X-Request-Id", sane)]).headers["X-Request-Id"] == sane)
        let long = String(repeating: "a", count: 129)
        for hostile in ["<script>alert(1)</script>", "a b", "x;y", long, "é", "${jndi:ldap://x}", ""] {
            let echoed = try server.request("GET", "/health", headers: [("X-Request-Id", hostile)]).headers["X-Request-Id"]
            #expect(echoed != nil && echoed != hostile, "echoed \(hostile)")
        }
    }

    @Test("every response, errors and malformed HTTP included, says nosniff and no-store, and names no server software")
    func hardeningHeaders() throws {
        let user = try APIUser.fresh(on: SharedServer.live())
        var responses = [
            try user.get("/v1/categories"), try user.get("/v1/categories/\(newID())"), try user.server.request("GET", "/health"),
            try user.server.request("GET", "/v1/users/me"),
        ].map { (status: $0.status, headers: $0.headers) }
        let client = try RawHTTPClient(port: user.server.port)
        defer { client.close() }
        try client.send(Array("GET /health HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n".utf8))
        let malformed = try client.readResponse(timeout: .seconds(10))
        #expect(malformed.status == 400)
        responses.append((status: malformed.status, headers: malformed.headers))
        for response in responses {
            #expect(response.headers["X-Content-Type-Options"] == "nosniff", "\(response.status)")
            #expect(response.headers["Cache-Control"] == "no-store", "\(response.status)")
            #expect(response.headers["Server"] == nil && response.headers["X-Powered-By"] == nil)
        }
    }

    @Test("malformed HTTP gets a bare status line and body, with no internals")
    func malformedHTTP() throws {
        let server = try SharedServer.live()
        for request in [
            "GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
            "GET /\u{1}x HTTP/1.1\r\nHost: a\r\n\r\n", "GET / HTTP/9.9\r\nHost: a\r\n\r\n", "\u{0}\u{0}\u{0}\r\n\r\n",
        ] {
            let client = try RawHTTPClient(port: server.port)
            defer { client.close() }
            try client.send(Array(request.utf8))
            let response = try client.readResponse(timeout: .seconds(10))
            #expect([400, 505].contains(response.status))
            #expect(response.text == "\(response.status) \(response.reason)\n", "\(response.text)")
        }
    }
}
