import HTTPServer
import Testing
import TestSupport

/// Issue 35 items 1 and 4: a body holds what has arrived of it, never what it announces; on a
/// server not under pressure a slow phone's body
/// is bound only by the 30 s inactivity timeout; when the budget is full it goes to the clients
/// holding least of it, and the slowest bodies of the others are shed. Time is moved by hand (the
/// injected clock); each real-time pause only lets the server read what was just sent.
@Suite("HTTPServer: the body budget is shared fairly and an honest slow body is served")
struct HTTPServerBodyFairnessTests {
    private func withManualClockServer(
        budget: Int = 268_435_456, _ body: (HTTPTestServer, ManualClock<Duration>) throws -> Void
    ) throws {
        let manual = ManualClock<Duration>(.seconds(1000))
        try withHTTPTestServer(
            responder: HTTPClosureResponder.echo,
            configure: {
                $0.clock = manual.httpClock
                $0.minBodyBytesPerSecond = 1024
                $0.bodyRateGracePeriod = .seconds(10)
                $0.bodyReadTimeout = .seconds(30)
                $0.maxBodyBytes = min(budget, 2_097_152)
                $0.maxBufferedBodyBytes = budget
            }
        ) { server in try body(server, manual) }
    }

    private func send(_ bytes: String, on client: RawHTTPClient, sourceLocation: SourceLocation = #_sourceLocation) throws {
        try sendLettingServerRead(bytes, on: client, sourceLocation: sourceLocation)
    }

    private func head(_ method: String, _ length: Int) -> String {
        "\(method) /upload HTTP/1.1\r\nHost: h\r\nContent-Length: \(length)\r\n\r\n"
    }

    @Test("what a body holds grows with what has arrived, not with what it announces")
    func holdsWhatArrived() throws {
        try withManualClockServer { server, _ in
            let client = try server.client()
            try send(head("POST", 2_000_000), on: client)
            #expect(server.server.bufferedBodyBytes == 0)
            try send(String(repeating: "a", count: 1000), on: client)
            #expect(server.server.bufferedBodyBytes == 1000)
        }
    }

    /// The phones: 30 KB at 300 B/s (100 s), and 2 KB followed by a 29 s stall; both
    /// were answered 408 after 10 s.
    @Test("on a server not under pressure, a body at 300 B/s and one stalling 29 s are served")
    func slowPhonesServed() throws {
        try withManualClockServer { server, manual in
            let steady = try server.client()
            let stalling = try server.client()
            try send(head("POST", 30_000), on: steady)
            try send(head("POST", 4_000), on: stalling)
            try send(String(repeating: "s", count: 2_000), on: stalling)
            // 1,500 bytes every 5 s: 300 B/s on average.
            for step in 1...20 {
                if step == 6 {
                    // At 29 s, after 29 s of silence, the stalled body's other 2 KB.
                    manual.advance(by: .seconds(4))
                    try stalling.send(String(repeating: "t", count: 2_000))
                    manual.advance(by: .seconds(1))
                } else {
                    manual.advance(by: .seconds(5))
                }
                let bytes = String(repeating: "a", count: 1_500)
                if step == 20 { try steady.send(bytes) } else { try send(bytes, on: steady) }
            }
            #expect(try stalling.readResponse(timeout: .seconds(10)).text == "POST /upload 4000")
            #expect(try steady.readResponse(timeout: .seconds(10)).text == "POST /upload 30000")
        }
    }

    @Test("while more than half the budget is held, a body under the minimum rate is cut 408 after the grace period")
    func minimumRateUnderPressure() throws {
        try withManualClockServer(budget: 100_000) { server, manual in
            let big = try server.client()
            try send(head("POST", 90_000), on: big)
            try send(String(repeating: "b", count: 60_000), on: big)
            let trickle = try server.client()
            try send(head("POST", 10_000), on: trickle)
            for _ in 0..<2 {
                manual.advance(by: .seconds(5) - .milliseconds(1))
                try send("a", on: trickle)
                try send(String(repeating: "b", count: 700), on: big)
            }
            manual.advance(by: .milliseconds(100))
            let response = try trickle.readResponse(timeout: .seconds(10))
            #expect(response.status == 408)
            // The big body kept its pace (6 KiB/s): it goes on.
            #expect(big.staysQuiet(for: .milliseconds(200)))
        }
    }

    @Test("with the budget full, a client holding little is served and the slowest body of the biggest holder is shed 503")
    func fullBudgetGoesToTheLeast() throws {
        try withManualClockServer(budget: 100_000) { server, manual in
            // One address holds the whole budget with two bodies, one faster than the other.
            let fast = try server.client()
            let slow = try server.client()
            try send(head("POST", 60_000), on: fast)
            try send(head("POST", 60_000), on: slow)
            try send(String(repeating: "f", count: 55_000), on: fast)
            try send(String(repeating: "s", count: 45_000), on: slow)
            #expect(server.server.bufferedBodyBytes == 100_000)
            // A tick later each I/O thread has published its slowest body.
            manual.advance(by: .milliseconds(100))
            #expect(fast.staysQuiet(for: .milliseconds(200)))
            // Another client's upload, from another address, arrives whole with its head.
            // Another client, from another address, starts an upload: it is given room.
            let other = try RawHTTPClient(port: server.port, sourceHost: "127.0.0.2")
            try send(head("POST", 4_000) + String(repeating: "o", count: 2_000), on: other)
            manual.advance(by: .seconds(1))
            let shed = try slow.readResponse(timeout: .seconds(10))
            #expect(shed.status == 503)
            #expect(shed.headers["Retry-After"] != nil)
            #expect(fast.staysQuiet(for: .milliseconds(200)))
            try other.send(String(repeating: "o", count: 2_000))
            #expect(try other.readResponse(timeout: .seconds(10)).text == "POST /upload 4000")
            try fast.send(String(repeating: "f", count: 5_000))
            #expect(try fast.readResponse(timeout: .seconds(10)).text == "POST /upload 60000")
        }
    }
}
