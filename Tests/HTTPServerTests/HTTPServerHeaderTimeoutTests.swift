import HTTPServer
import Testing
import TestSupport

/// Issue 13 item 4: the header timeout cannot be stretched by empty lines or by starting late.
/// Time is moved by hand (the injected clock); each real-time pause only lets the server read
/// what was just sent before the clock moves.
@Suite("HTTPServer: the header timeout cannot be stretched")
struct HTTPServerHeaderTimeoutTests {
    /// A server whose clock stands still until the test moves it: 10 s header timeout, 60 s
    /// keep-alive, as in production.
    private func withManualClockServer(_ body: (HTTPTestServer, ManualClock<Duration>) throws -> Void) throws {
        try HTTPServerTests.withManualClockServer(
            configure: {
                $0.headerReadTimeout = .seconds(10)
                $0.keepAliveIdleTimeout = .seconds(60)
            }, body)
    }

    private func send(_ bytes: String, on client: RawHTTPClient, sourceLocation: SourceLocation = #_sourceLocation) throws {
        try sendLettingServerRead(bytes, on: client, sourceLocation: sourceLocation)
    }

    @Test("a lone CR, then its LF just before each deadline, does not move a new connection to the keep-alive timeout")
    func loneCarriageReturnThenLineFeed() throws {
        try withManualClockServer { server, manual in
            let client = try server.client()
            try send("\r", on: client)
            manual.advance(by: .seconds(9))
            try send("\n", on: client)
            manual.advance(by: .seconds(2))
            // 11 s after the connect and no request: 408, then closed.
            let response = try client.readResponse(timeout: .seconds(10))
            #expect(response.status == 408)
            #expect(response.headers["Connection"] == "close")
            #expect(client.waitForClose(timeout: .seconds(10)))
        }
    }

    @Test("repeating lone CR and LF pairs never keeps a connection without a request open past 10 s")
    func repeatedPairs() throws {
        try withManualClockServer { server, manual in
            let client = try server.client()
            // Each byte comes 4 s after the previous one: every single gap is within a deadline.
            try send("\r", on: client)
            manual.advance(by: .seconds(4))
            try send("\n", on: client)
            manual.advance(by: .seconds(4))
            try client.send("\r")
            manual.advance(by: .seconds(4))
            #expect(client.waitForClose(timeout: .seconds(10)), "still open 12 s after the connect")
        }
    }

    @Test("empty lines before a keep-alive connection's next request count against the 10 s header timeout")
    func emptyLinesBetweenRequests() throws {
        try withManualClockServer { server, manual in
            let client = try server.client()
            try client.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(try client.readResponse().status == 200)
            try send("\r\n", on: client)
            manual.advance(by: .seconds(11))
            // Without them the connection could idle for 60 s; with them the header clock runs.
            let response = try client.readResponse(timeout: .seconds(10))
            #expect(response.status == 408)
            #expect(client.waitForClose(timeout: .seconds(10)))
        }
    }

    @Test("a new connection that starts its request late must still complete it within 10 s of connecting")
    func lateFirstByte() throws {
        try withManualClockServer { server, manual in
            let client = try server.client()
            #expect(client.staysQuiet(for: .milliseconds(100)))
            manual.advance(by: .seconds(9))
            try send("GET / HTTP/1.1\r\n", on: client)
            manual.advance(by: .seconds(2))
            let response = try client.readResponse(timeout: .seconds(10))
            #expect(response.status == 408)
            #expect(client.waitForClose(timeout: .seconds(10)))
        }
    }

    @Test("a new connection whose request arrives whole within 10 s is served and kept alive")
    func timelyFirstRequest() throws {
        try withManualClockServer { server, manual in
            let client = try server.client()
            try send("\r\n", on: client)
            manual.advance(by: .seconds(9))
            try client.send("GET /a HTTP/1.1\r\nHost: h\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.text == "GET /a 0")
            // Then the keep-alive timeout applies (from when the server has taken the connection
            // back from its worker): still open 30 s later.
            #expect(client.staysQuiet(for: .milliseconds(250)))
            manual.advance(by: .seconds(30))
            #expect(client.staysQuiet(for: .milliseconds(250)))
            manual.advance(by: .seconds(31))
            #expect(try client.readUntilClosed(timeout: .seconds(10)).isEmpty)
        }
    }
}
