import Foundation
import HTTPServer
import Synchronization
import Testing
import TestSupport

@Suite("HTTPServer: timeouts")
struct HTTPServerTimeoutTests {
    @Test("a slowloris client is cut off at the header deadline with 408 while another client is served")
    func slowloris() throws {
        try withHTTPTestServer(configure: { $0.headerReadTimeout = .milliseconds(500) }) { server in
            let slow = try server.client()
            let port = server.port
            let request = Array("GET / HTTP/1.1\r\nHost: h\r\nX-Padding: \(String(repeating: "p", count: 200))\r\n\r\n".utf8)
            let dripping = BackgroundThread {
                for byte in request {
                    guard (try? slow.send([byte])) != nil else { return }
                    usleep(100_000)
                }
            }
            // Meanwhile another client is served, several times.
            for _ in 0..<3 {
                let other = try RawHTTPClient(port: port)
                try other.send("GET /other HTTP/1.1\r\nHost: h\r\n\r\n")
                #expect(try other.readResponse().status == 200)
            }
            let response = try slow.readResponse(timeout: .seconds(20))
            #expect(response.status == 408)
            #expect(response.headers["Connection"] == "close")
            #expect(slow.waitForClose(timeout: .seconds(20)))
            dripping.wait()
        }
    }

    @Test("a body that stalls is cut off with 408")
    func bodyIdle() throws {
        try withHTTPTestServer(configure: { $0.bodyReadTimeout = .milliseconds(300) }) { server in
            let client = try server.client()
            try client.send("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc")
            let response = try client.readResponse(timeout: .seconds(20))
            #expect(response.status == 408)
            #expect(client.waitForClose())
        }
    }

    @Test("an idle keep-alive connection is closed silently")
    func keepAliveIdle() throws {
        try withHTTPTestServer(configure: { $0.keepAliveIdleTimeout = .milliseconds(300) }) { server in
            let client = try server.client()
            try client.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(try client.readResponse().status == 200)
            let rest = try client.readUntilClosed(timeout: .seconds(20))
            #expect(rest.isEmpty)
        }
    }

    @Test("a connection that never sends a byte is closed silently after the header timeout")
    func silentConnection() throws {
        try withHTTPTestServer(configure: { $0.headerReadTimeout = .milliseconds(300) }) { server in
            let client = try server.client()
            let rest = try client.readUntilClosed(timeout: .seconds(20))
            #expect(rest.isEmpty)
        }
    }

    @Test("timeouts follow the injected clock: nothing expires until it moves")
    func injectedClock() throws {
        let manual = ManualClock<Duration>(.seconds(1000))
        try withHTTPTestServer(configure: {
            $0.clock = manual.httpClock
            $0.keepAliveIdleTimeout = .seconds(60)
            $0.headerReadTimeout = .seconds(10)
        }) { server in
            let client = try server.client()
            try client.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(try client.readResponse().status == 200)
            let partial = try server.client()
            try partial.send("GET / HTTP/1.1\r\n")
            // Real time passes, the clock does not: both connections stay open.
            #expect(client.staysQuiet(for: .milliseconds(300)))
            #expect(partial.staysQuiet(for: .milliseconds(1)))
            manual.advance(by: .seconds(11))
            let timedOut = try partial.readResponse(timeout: .seconds(20))
            #expect(timedOut.status == 408)
            #expect(client.staysQuiet(for: .milliseconds(200)))
            manual.advance(by: .seconds(50))
            #expect(try client.readUntilClosed(timeout: .seconds(20)).isEmpty)
        }
    }
}
