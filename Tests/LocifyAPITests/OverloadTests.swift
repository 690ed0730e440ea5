import Foundation
import JSON
import LocifyAPI
import Testing
import TestSupport
import TestSupportServer

/// Issue 13 item 3 through the application: the HTTP server's overload answer is rendered in the
/// API's error shape (503 S003 with `Retry-After`), and its budget comes from the environment.
@Suite("Overload: the body budget answers 503 S003")
struct OverloadTests {
    private static let mebibyte = 1024 * 1024

    @Test("LOCIFY_MAX_BUFFERED_BODY_BYTES sets the body budget: 256 MiB by default, from 2 MiB (one largest body)")
    func configuration() throws {
        var environment = ["DATABASE_URL": "postgres://localhost/x", "FIREBASE_PROJECT_ID": "p"]
        #expect(try Configuration(environment: environment).maxBufferedBodyBytes == 256 * Self.mebibyte)
        environment["LOCIFY_MAX_BUFFERED_BODY_BYTES"] = "2097152"
        #expect(try Configuration(environment: environment).maxBufferedBodyBytes == 2 * Self.mebibyte)
        for bad in ["2097151", "0", "-1", "lots"] {
            environment["LOCIFY_MAX_BUFFERED_BODY_BYTES"] = bad
            #expect(throws: ConfigurationError.self) { try Configuration(environment: environment) }
        }
    }

    @Test("over the body budget a request body gets 503 S003 with Retry-After, /health is still served, and bodies are read again once memory frees")
    func bodyBudget() throws {
        let server = try TestServer.start { $0.maxBufferedBodyBytes = 2 * Self.mebibyte }
        defer { server.stop() }
        // A user's body of 2 MiB - 2 bytes, all but its last byte sent (an anonymous one is refused
        // on its head), holds the budget but 2 bytes: its buffer, grown to the announced length.
        let token = try server.token(for: "budget-holder")
        let head = { (length: Int) in
            "POST /v1/categories HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
                + "Authorization: Bearer \(token)\r\nContent-Length: \(length)\r\n\r\n"
        }
        let holder = try RawHTTPClient(port: server.port)
        try holder.send(head(2 * Self.mebibyte - 2))
        try holder.send([UInt8](repeating: 0x20, count: 2 * Self.mebibyte - 3))
        #expect(eventually(timeout: .seconds(20)) { server.application.server.bufferedBodyBytes == 2 * Self.mebibyte - 2 })
        // The same user's next body, arriving after its head: no room for its 10 bytes.
        let next = try RawHTTPClient(port: server.port)
        try next.send(head(10))
        #expect(next.staysQuiet(for: .milliseconds(300)))
        try next.send(#"{"name":1}"#)
        let refused: RawHTTPResponse? = try next.readResponse(timeout: .seconds(10))
        let small = "POST /v1/categories HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
        let response = try #require(refused)
        #expect(response.headers["Retry-After"] == "1")
        #expect(response.headers["Content-Type"]?.hasPrefix("application/json") == true)
        #expect(response.headers["X-Request-Id"] != nil)
        let error = (try? JSONParser.parse(response.body))?.objectValue?["error"]?.objectValue
        #expect(error?["code"]?.stringValue == "S003")
        #expect(error?["message"]?.stringValue == "server is busy, retry later")

        #expect(try roundTrip(server, "GET /health HTTP/1.1\r\nHost: a\r\n\r\n").status == 200)

        // The holder goes away: the next body is read (and refused for its missing token).
        holder.close()
        #expect(eventually(timeout: .seconds(20)) { (try? roundTrip(server, small))?.status == 401 })
    }

    private func roundTrip(_ server: TestServer, _ request: String) throws -> RawHTTPResponse {
        let client = try RawHTTPClient(port: server.port)
        defer { client.close() }
        try client.send(request)
        return try client.readResponse(timeout: .seconds(10))
    }
}
