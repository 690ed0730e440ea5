import Foundation
import HTTPServer
import Synchronization
import Testing
import TestSupport

@Suite("HTTPServer: connection limit and backpressure")
struct HTTPServerLimitsTests {
    /// Before issue 35 item 2 the third client waited in the backlog until a connection closed by
    /// itself: busy connections were never evicted.
    @Test("at maxConnections with no idle connection a waiting client is accepted in place of a busy one")
    func maxConnectionsBusy() throws {
        try withHTTPTestServer(configure: { $0.maxConnections = 2 }) { server in
            // Both connections are receiving a request head: neither is idle.
            let first = try server.client()
            let second = try server.client()
            for client in [first, second] {
                try client.send("GET / HTTP/1.1\r\n")
                usleep(150_000)  // the first head is the older one
            }
            #expect(eventually { server.server.openConnections == 2 })
            let third = try server.client()
            try third.send("GET /third HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(try third.readResponse(timeout: .seconds(20)).text == "GET /third 0")
            #expect(first.waitForClose(timeout: .seconds(20)), "the oldest head made room")
            #expect(server.server.evictedConnections == 1)
            try second.send("Host: h\r\n\r\n")
            #expect(try second.readResponse(timeout: .seconds(20)).status == 200)
        }
    }

    @Test("at maxConnections the longest-idle connection is closed to admit a waiting client")
    func maxConnectionsEvictsIdle() throws {
        try withHTTPTestServer(configure: { $0.maxConnections = 2 }) { server in
            let first = try server.client()
            let second = try server.client()
            for client in [first, second] {
                try client.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
                #expect(try client.readResponse().status == 200)
                // The first has been idle the longest; both long enough (100 ms) to be closed.
                usleep(150_000)
            }
            let third = try server.client()
            try third.send("GET /third HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(try third.readResponse(timeout: .seconds(20)).text == "GET /third 0")
            #expect(first.waitForClose(timeout: .seconds(20)), "the longest-idle connection made room")
            #expect(server.server.evictedConnections == 1)
            #expect(eventually(timeout: .seconds(10)) { server.server.openConnections == 2 })
            // The second was not closed: once the third is done, it is served again.
            third.close()
            try second.send("GET /second HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(try second.readResponse(timeout: .seconds(20)).text == "GET /second 0")
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
