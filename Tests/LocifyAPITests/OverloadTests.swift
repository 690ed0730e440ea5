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
        // One announced 2 MiB body (of a user: an anonymous one is refused on its head) holds
        // the whole budget.
        let holder = try RawHTTPClient(port: server.port)
        try holder.send(
            "POST /v1/categories HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
                + "Authorization: Bearer \(server.token(for: "budget-holder"))\r\n"
                + "Content-Length: \(2 * Self.mebibyte)\r\n\r\n")
        // Let the server reserve it before another body can take a share first.
        #expect(holder.staysQuiet(for: .seconds(1)))
        let small = "POST /v1/categories HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
        var refused: RawHTTPResponse?
        #expect(eventually(timeout: .seconds(20)) {
            let response = try? roundTrip(server, small)
            if response?.status == 503 { refused = response }
            return refused != nil
        })
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
