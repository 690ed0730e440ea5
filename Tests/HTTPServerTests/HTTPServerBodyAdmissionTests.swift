import Foundation
import HTTPServer
import Synchronization
import Testing
import TestSupport

/// Issue 23 item 1: the application decides about a body from its head (`admitBody`), before
/// any of it is reserved or read; admitted bodies are charged to their owner's (or address's)
/// share of the body budget.
@Suite("HTTPServer: bodies are admitted on their head, within per-client shares")
struct HTTPServerBodyAdmissionTests {
    private static let mebibyte = 1024 * 1024

    /// Echoes like `HTTPClosureResponder.echo`; decides about bodies with `decide` and records
    /// each call (path and `mayBlock`).
    private final class DecidingResponder: HTTPResponder {
        let decide: @Sendable (HTTPRequest, Bool) -> HTTPBodyAdmission
        let calls = Mutex<[(path: String, mayBlock: Bool)]>([])

        init(decide: @escaping @Sendable (HTTPRequest, Bool) -> HTTPBodyAdmission) {
            self.decide = decide
        }

        func respond(to request: HTTPRequest, connection: ConnectionInfo) -> HTTPResponse {
            HTTPClosureResponder.echo.respond(to: request, connection: connection)
        }

        func admitBody(of head: HTTPRequest, connection: ConnectionInfo, mayBlock: Bool) -> HTTPBodyAdmission {
            calls.withLock { $0.append((head.path, mayBlock)) }
            #expect(head.body.isEmpty)
            return decide(head, mayBlock)
        }

        var recorded: [(path: String, mayBlock: Bool)] { calls.withLock { $0 } }
    }

    private static func currentThreadName() -> String {
        (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
    }

    private func postHead(_ path: String, _ length: Int, extra: String = "") -> String {
        "POST \(path) HTTP/1.1\r\nHost: h\r\n\(extra)Content-Length: \(length)\r\n\r\n"
    }

    @Test("a body refused on its head is answered before it is sent, and nothing of it is reserved")
    func refusedOnHead() throws {
        let responder = DecidingResponder { head, _ in
            head.headers["Authorization"] == nil
                ? .refuse(HTTPResponse(status: .unauthorized, body: Array("no token".utf8))) : .admit(owner: "alice")
        }
        try withHTTPTestServer(responder: responder) { server in
            let client = try server.client()
            try client.send(postHead("/upload", 2 * Self.mebibyte))
            let response = try client.readResponse(timeout: .seconds(10))
            #expect(response.status == 401)
            #expect(response.text == "no token")
            #expect(response.headers["Connection"] == "close")
            #expect(server.server.bufferedBodyBytes == 0)
            #expect(client.waitForClose(timeout: .seconds(10)))

            // With a token the same head is admitted (holding nothing until its body arrives), its
            // body read and answered.
            let admitted = try server.client()
            try admitted.send(postHead("/upload", 10, extra: "Authorization: Bearer t\r\n"))
            #expect(admitted.staysQuiet(for: .milliseconds(200)))
            #expect(server.server.bufferedBodyBytes == 0)
            try admitted.send("0123456789")
            #expect(try admitted.readResponse().text == "POST /upload 10")
            #expect(eventually(timeout: .seconds(10)) { server.server.bufferedBodyBytes == 0 })
            #expect(responder.recorded.map(\.mayBlock) == [false, false])
        }
    }

    @Test("a decision that needs to block is made on a worker; 100 Continue only after it admits")
    func decidedOnWorker() throws {
        let responder = DecidingResponder { head, mayBlock in
            guard mayBlock else { return .decideOnWorker }
            #expect(Self.currentThreadName().hasPrefix("http-worker"))
            return head.path == "/refused" ? .refuse(HTTPResponse(status: .forbidden)) : .admit(owner: nil)
        }
        try withHTTPTestServer(responder: responder) { server in
            let client = try server.client()
            try client.send(postHead("/upload", 5, extra: "Expect: 100-continue\r\n"))
            #expect(try client.readResponse(timeout: .seconds(10)).status == 100)
            try client.send("hello")
            #expect(try client.readResponse(timeout: .seconds(10)).text == "POST /upload 5")

            // Body bytes that came with the head wait for the decision, then are parsed.
            let partial = try server.client()
            try partial.send(postHead("/upload", 5) + "hel")
            #expect(eventually(timeout: .seconds(10)) { responder.recorded.count == 4 })
            try partial.send("lo")
            #expect(try partial.readResponse(timeout: .seconds(10)).text == "POST /upload 5")

            let refused = try server.client()
            try refused.send(postHead("/refused", 5, extra: "Expect: 100-continue\r\n"))
            #expect(try refused.readResponse(timeout: .seconds(10)).status == 403)
            #expect(refused.waitForClose(timeout: .seconds(10)))
            #expect(responder.recorded.map(\.mayBlock) == [false, true, false, true, false, true])
        }
    }

    @Test("a body that arrives whole with its head is not asked about; a bodiless request neither")
    func wholeBodiesAreNotAsked() throws {
        let responder = DecidingResponder { _, _ in .refuse(HTTPResponse(status: .forbidden)) }
        try withHTTPTestServer(responder: responder) { server throws in
            #expect(try server.roundTrip(postHead("/upload", 5) + "hello").text == "POST /upload 5")
            #expect(try server.roundTrip("GET /x HTTP/1.1\r\nHost: h\r\n\r\n").text == "GET /x 0")
            #expect(responder.recorded.isEmpty)
        }
    }

    @Test("one owner holds at most its share of the body budget: 429 past it while another owner is admitted")
    func ownerShare() throws {
        let responder = DecidingResponder { head, _ in .admit(owner: head.headers["X-Owner"]) }
        try withHTTPTestServer(
            responder: responder,
            configure: {
                $0.maxBodyBytes = 3 * Self.mebibyte
                $0.maxBufferedBodyBytes = 16 * Self.mebibyte
                $0.maxBufferedBodyBytesPerClient = 4 * Self.mebibyte
            }
        ) { server in
            // Alice holds her whole share with two bodies that arrived but for their last byte.
            var holders: [RawHTTPClient] = []
            for _ in 0..<2 {
                let holder = try server.client()
                try holder.send(postHead("/upload", 2 * Self.mebibyte, extra: "X-Owner: alice\r\n"))
                try holder.send([UInt8](repeating: 0x61, count: 2 * Self.mebibyte - 1))
                holders.append(holder)
            }
            #expect(eventually(timeout: .seconds(10)) { server.server.bufferedBodyBytes == 4 * Self.mebibyte })
            let third = try server.client()
            try third.send(postHead("/upload", 2 * Self.mebibyte, extra: "X-Owner: alice\r\n"))
            let refused = try third.readResponse(timeout: .seconds(10))
            #expect(refused.status == 429)
            #expect(refused.headers["Retry-After"] == "1")
            #expect(refused.headers["Connection"] == "close")

            // Another owner, from the same address, still gets in.
            let bob = try server.client()
            try bob.send(postHead("/upload", 5, extra: "X-Owner: bob\r\n"))
            try bob.send("hello")
            #expect(try bob.readResponse(timeout: .seconds(10)).text == "POST /upload 5")

            // Without an owner the address is the holder: its share is separate from alice's.
            let anonymous = try server.client()
            try anonymous.send(postHead("/upload", 2 * Self.mebibyte))
            try anonymous.send([UInt8](repeating: 0x61, count: 2 * Self.mebibyte - 1))
            #expect(eventually(timeout: .seconds(10)) { server.server.bufferedBodyBytes == 6 * Self.mebibyte })
            for holder in holders { holder.close() }
            anonymous.close()
            #expect(eventually(timeout: .seconds(10)) { server.server.bufferedBodyBytes == 0 })
        }
    }

    @Test("one address holds at most its share of the body budget; another address is admitted")
    func addressShare() throws {
        try withHTTPTestServer(configure: {
            $0.maxBufferedBodyBytes = 16 * Self.mebibyte
            $0.maxBufferedBodyBytesPerClient = 2 * Self.mebibyte
        }) { server in
            let holder = try RawHTTPClient(port: server.port, sourceHost: "127.0.0.2")
            try holder.send(postHead("/upload", 2 * Self.mebibyte - 1))
            try holder.send([UInt8](repeating: 0x61, count: 2 * Self.mebibyte - 2))
            #expect(eventually(timeout: .seconds(10)) { server.server.bufferedBodyBytes == 2 * Self.mebibyte - 1 })
            let second = try RawHTTPClient(port: server.port, sourceHost: "127.0.0.2")
            try second.send(postHead("/upload", 5) + "hello")
            #expect(try second.readResponse(timeout: .seconds(10)).status == 429)
            let other = try RawHTTPClient(port: server.port, sourceHost: "127.0.0.3")
            try other.send(postHead("/upload", 5))
            try other.send("hello")
            #expect(try other.readResponse(timeout: .seconds(10)).text == "POST /upload 5")
            holder.close()
            #expect(eventually(timeout: .seconds(10)) { server.server.bufferedBodyBytes == 0 })
        }
    }
}
