import Foundation
import JSON
import Testing
import TestSupport
import TestSupportServer

/// OWASP API4 (unrestricted resource consumption): every limit of openapi.yaml
/// holds end to end with the server's default configuration — body size, header block, header
/// count, request line, page size, pull limit, push batch size, JSON nesting — and the per-user
/// rate limit answers 429 S001 with `Retry-After`.
@Suite("Security: resource limits and rate limiting (OWASP API4)")
struct SecurityResourceLimitsTests {
    private let maxBody = 2 * 1024 * 1024

    /// Sends raw bytes on a fresh connection and reads one response.
    private func raw(_ server: TestServer, _ bytes: [UInt8]) throws -> RawHTTPResponse {
        let client = try RawHTTPClient(port: server.port)
        defer { client.close() }
        try client.send(bytes)
        return try client.readResponse(timeout: .seconds(30))
    }

    @Test("a body of exactly 2 MiB is read (the limit is inclusive); one byte more is 413 E010 before any of it is read")
    func bodyLimit() throws {
        let user = try APIUser.fresh(on: SharedServer.live())
        let id = newID()
        let prefix = Array(#"{"id":"\#(id)","name":"Big","padding":""#.utf8)
        let suffix = Array(#""}"#.utf8)
        let padding = [UInt8](repeating: UInt8(ascii: "a"), count: maxBody - prefix.count - suffix.count)
        let exact = try user.send("POST", "/v1/categories", body: prefix + padding + suffix, headers: [("Content-Type", "application/json")])
        #expect(exact.status == 201, "\(exact.status) \(exact.text.prefix(200))")

        let head = "POST /v1/categories HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(user.token)\r\n"
            + "Content-Type: application/json\r\nContent-Length: \(maxBody + 1)\r\n\r\n"
        let over = try raw(user.server, Array(head.utf8))
        #expect(over.status == 413)
        #expect(TestResponse.errorCode(of: over) == "E010")
    }

    @Test("a chunked body growing past 2 MiB is cut off with 413")
    func chunkedBodyLimit() throws {
        let user = try APIUser.fresh(on: SharedServer.live())
        let client = try RawHTTPClient(port: user.server.port)
        defer { client.close() }
        let head = "POST /v1/categories HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(user.token)\r\n"
            + "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        try client.send(Array(head.utf8))
        let chunk = Array("100000\r\n".utf8) + [UInt8](repeating: 0x20, count: 0x100000) + Array("\r\n".utf8)
        try? client.send(chunk)
        try? client.send(chunk)
        try? client.send(Array("1\r\n".utf8))
        let response = try client.readResponse(timeout: .seconds(30))
        #expect(response.status == 413)
    }

    @Test("header block over 16 KiB or over 100 fields is 431; a request line over 8 KiB is 414; the connection is closed")
    func headerLimits() throws {
        let server = try SharedServer.live()
        let bigValue = String(repeating: "v", count: 16 * 1024)
        var response = try raw(server, Array("GET /health HTTP/1.1\r\nHost: a\r\nX-Big: \(bigValue)\r\n\r\n".utf8))
        #expect(response.status == 431)
        let fields = (0..<101).map { "X-F\($0): 1\r\n" }.joined()
        response = try raw(server, Array("GET /health HTTP/1.1\r\nHost: a\r\n\(fields)\r\n".utf8))
        #expect(response.status == 431)
        let longPath = "/v1/categories?" + String(repeating: "a", count: 8 * 1024)
        response = try raw(server, Array("GET \(longPath) HTTP/1.1\r\nHost: a\r\n\r\n".utf8))
        #expect(response.status == 414)
        #expect(response.headers["Connection"]?.lowercased() == "close")
    }

    @Test("page size, page and pull limit outside their ranges are E001; a huge page number is an empty page, not an overflow")
    func paging() throws {
        let user = try APIUser.fresh()
        for path in ["/v1/categories", "/v1/locations"] {
            for query in ["size=101", "size=0", "size=-1", "page=0", "page=-5", "page=1.5", "size=99999999999999999999999", "page=abc"] {
                let field = query.hasPrefix("size") ? "size" : "page"
                expectError(try user.get("\(path)?\(query)"), 400, "E001", field: field)
            }
            let far = try user.get("\(path)?page=9223372036854775807&size=100")
            #expect(far.status == 200, "\(far.text)")
            #expect(far.data.isEmpty && far.meta["page"] == 9_223_372_036_854_775_807.0)
            #expect(try user.get("\(path)?size=100").status == 200)
        }
        for limit in ["1001", "0", "-1", "1e3", "99999999999999999999999"] {
            expectError(try user.get("/v1/sync/changes?limit=\(limit)"), 400, "E001", field: "limit")
        }
        #expect(try user.get("/v1/sync/changes?limit=1000").status == 200)
    }

    @Test("a push of 51 changes is E001 and applies nothing; 50 are applied")
    func pushBatchSize() throws {
        let user = try APIUser.fresh()
        let ids = (0..<51).map { _ in newID() }
        let changes: [JSONValue] = ids.map { id in
            ["type": "category", "action": "create", "data": categoryBody(id: id, name: "Batch")]
        }
        expectError(try user.post("/v1/sync/push", ["changes": .array(changes)]), 400, "E001", field: "changes")
        #expect(try user.get("/v1/categories?size=100").meta["total_count"] == 4)
        let accepted = try user.post("/v1/sync/push", ["changes": .array(Array(changes.prefix(50)))])
        #expect(accepted.status == 200 && accepted.object["results"]?.arrayValue?.count == 50)
        #expect(try user.get("/v1/categories?size=100").meta["total_count"] == 54)
    }

    @Test("JSON nested 100,000 deep, or holding a million elements, is refused with E001 without exhausting the stack")
    func hostileJSON() throws {
        let user = try APIUser.fresh()
        let deep = [UInt8](repeating: UInt8(ascii: "["), count: 100_000) + [UInt8](repeating: UInt8(ascii: "]"), count: 100_000)
        let headers = [("Content-Type", "application/json")]
        expectError(try user.send("POST", "/v1/categories", body: deep, headers: headers), 400, "E001", field: "body")
        expectError(try user.send("POST", "/v1/sync/push", body: deep, headers: headers), 400, "E001", field: "body")
        let wide = Array(("[" + String(repeating: "0,", count: 1_000_000) + "0]").utf8)
        expectError(try user.send("POST", "/v1/sync/push", body: wide, headers: headers), 400, "E001", field: "body")
        #expect(try user.get("/v1/users/me").status == 200)
    }

    @Test("the per-user rate limit answers 429 S001 with Retry-After in seconds, for that user only; operational endpoints are never limited")
    func rateLimit() throws {
        let server = try TestServer.start(.inProcess) { configuration in
            configuration.rateLimitPerSecond = 0.2
            configuration.rateLimitBurst = 3
        }
        defer { server.stop() }
        let busy = try server.token(for: "limited-" + newID().prefix(8))
        let other = try server.token(for: "calm-" + newID().prefix(8))
        var statuses: [Int] = []
        var limited: TestResponse?
        for _ in 0..<6 {
            let response = try server.request("GET", "/v1/users/me", token: busy)
            statuses.append(response.status)
            if response.status == 429 { limited = response }
        }
        #expect(statuses.prefix(3).allSatisfy { $0 == 200 }, "\(statuses)")
        #expect(statuses.suffix(3).allSatisfy { $0 == 429 }, "\(statuses)")
        let refused = try #require(limited)
        #expect(refused.errorCode == "S001")
        let retryAfter = try #require(refused.headers["Retry-After"].flatMap { Int($0) })
        #expect(retryAfter >= 1)
        #expect(try server.request("GET", "/v1/users/me", token: other).status == 200)
        for path in ["/health", "/health/ready", "/metrics", "/openapi.yaml"] {
            for _ in 0..<5 {
                #expect(try server.request("GET", path).status != 429, "\(path) was rate limited")
            }
        }
    }
}

extension TestResponse {
    /// `error.code` of a raw response's JSON body.
    static func errorCode(of response: RawHTTPResponse) -> String? {
        (try? JSONParser.parse(response.body))?.objectValue?["error"]?.objectValue?["code"]?.stringValue
    }
}
