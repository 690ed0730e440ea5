import Foundation
import HTTPServer
import Synchronization
import Testing
import TestSupport

@Suite("HTTPServer: connection limit and backpressure")
struct HTTPServerLimitsTests {
    @Test("at maxConnections a third client waits in the backlog until a connection closes, then is served")
    func maxConnections() throws {
        try withHTTPTestServer(configure: { $0.maxConnections = 2 }) { server in
            let first = try server.client()
            let second = try server.client()
            for client in [first, second] {
                try client.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
                #expect(try client.readResponse().status == 200)
            }
            #expect(server.server.openConnections == 2)
            let third = try server.client()
            try third.send("GET /third HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(third.staysQuiet(for: .milliseconds(300)), "not accepted while two connections are open")
            first.close()
            let response = try third.readResponse(timeout: .seconds(20))
            #expect(response.text == "GET /third 0")
            #expect(server.server.openConnections == 2)
        }
    }

    @Test("a client that never reads a 4 MiB response does not block other clients")
    func slowReader() throws {
        let big = [UInt8](repeating: 0x61, count: 4 * 1024 * 1024)
        let responder = HTTPClosureResponder(mode: { _ in .inline }) { request, _ in
            request.path == "/big" ? HTTPResponse(status: .ok, body: big) : HTTPResponse(status: .ok, body: Array("small".utf8))
        }
        try withHTTPTestServer(responder: responder, configure: { $0.ioThreads = 1 }) { server in
            let stubborn = try server.client()
            // Several big responses requested, none read: the server must not buffer them all.
            try stubborn.send(String(repeating: "GET /big HTTP/1.1\r\nHost: h\r\n\r\n", count: 4))
            usleep(100_000)
            for _ in 0..<5 {
                let other = try server.client()
                try other.send("GET /small HTTP/1.1\r\nHost: h\r\n\r\n")
                #expect(try other.readResponse().text == "small")
            }
            // The stubborn client eventually reads: it gets complete, ordered responses.
            for _ in 0..<4 {
                #expect(try stubborn.readResponse(timeout: .seconds(30)).body.count == big.count)
            }
        }
    }

    @Test("a stuck writer is closed after the write timeout")
    func writeTimeout() throws {
        let big = [UInt8](repeating: 0x62, count: 8 * 1024 * 1024)
        let responder = HTTPClosureResponder { _, _ in HTTPResponse(status: .ok, body: big) }
        try withHTTPTestServer(responder: responder, configure: { $0.writeTimeout = .milliseconds(300) }) { server in
            let client = try server.client()
            try client.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(eventually { server.server.openConnections == 1 })
            // The client reads nothing; the server gives up on it.
            #expect(eventually(timeout: .seconds(20)) { server.server.openConnections == 0 })
            #expect(client.waitForClose())
        }
    }
}
