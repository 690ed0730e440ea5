import HTTPServer
import Testing
import TestSupport

/// Issue 23 item 1, as issue 35 item 4 left it: while the body budget is under pressure (more
/// than half of it held), a body must keep arriving at a minimum rate (1 KiB/s on average once
/// 10 s have passed since its admission) or it is answered 408 and what it holds freed, so a
/// trickle cannot hold the budget others need. Time is moved by hand (the injected clock); each
/// real-time pause only lets the server read what was just sent.
@Suite("HTTPServer: under pressure, a body slower than the minimum rate is cut off")
struct HTTPServerBodyRateTests {
    private func withManualClockServer(_ body: (HTTPTestServer, ManualClock<Duration>) throws -> Void) throws {
        try HTTPServerTests.withManualClockServer(
            configure: {
                $0.minBodyBytesPerSecond = 1024
                $0.bodyRateGracePeriod = .seconds(10)
                $0.bodyReadTimeout = .seconds(30)
                $0.maxBodyBytes = 200_000
                $0.maxBufferedBodyBytes = 200_000
            }, body)
    }

    private func send(_ bytes: String, on client: RawHTTPClient, sourceLocation: SourceLocation = #_sourceLocation) throws {
        try sendLettingServerRead(bytes, on: client, sourceLocation: sourceLocation)
    }

    private static let head = "POST /upload HTTP/1.1\r\nHost: h\r\nContent-Length: 100000\r\n\r\n"

    @Test("under pressure, a body averaging just over 1 KiB/s completes however long it takes; one falling under is cut off then")
    func steadyBodies() throws {
        try withManualClockServer { server, manual in
            // Another upload holds more than half the budget: the server is under pressure.
            let big = try server.client()
            try send("POST /upload HTTP/1.1\r\nHost: h\r\nContent-Length: 150000\r\n\r\n", on: big)
            try send(String(repeating: "b", count: 101_000), on: big)
            let steady = try server.client()
            let slowing = try server.client()
            try send("POST /upload HTTP/1.1\r\nHost: h\r\nContent-Length: 30000\r\n\r\n", on: steady)
            try send(Self.head, on: slowing)
            // 25 s at 1,200 bytes a second each; then the second one stops. The big upload goes on
            // at 1 KB/s.
            for _ in 1...25 {
                manual.advance(by: .seconds(1))
                try big.send(String(repeating: "b", count: 1000))
                try steady.send(String(repeating: "s", count: 1200))
                try send(String(repeating: "w", count: 1200), on: slowing)
            }
            // 30,000 bytes after 25 s: complete.
            #expect(try steady.readResponse(timeout: .seconds(10)).text == "POST /upload 30000")
            // 30,000 bytes received by 25 s: the average falls under 1 KiB/s at about 29.3 s.
            manual.advance(by: .seconds(4))
            try big.send(String(repeating: "b", count: 4000))
            #expect(slowing.staysQuiet(for: .milliseconds(200)))
            manual.advance(by: .seconds(1))
            #expect(try slowing.readResponse(timeout: .seconds(10)).status == 408)
            // Only the big upload holds the budget now: its buffer, grown past the 130,000 bytes
            // that arrived, up to the 150,000 it announced.
            #expect(eventually(timeout: .seconds(10)) { (130_000...150_000).contains(server.server.bufferedBodyBytes) })
        }
    }

    @Test("with the minimum rate off, only the body inactivity timeout applies")
    func rateOff() throws {
        try HTTPServerTests.withManualClockServer(configure: {
            $0.minBodyBytesPerSecond = 0
            $0.bodyReadTimeout = .seconds(30)
        }) { server, manual in
            let client = try server.client()
            try send(Self.head, on: client)
            for _ in 0..<4 {
                manual.advance(by: .seconds(20))
                try send("a", on: client)
            }
            manual.advance(by: .seconds(31))
            #expect(try client.readResponse(timeout: .seconds(10)).status == 408)
        }
    }
}
