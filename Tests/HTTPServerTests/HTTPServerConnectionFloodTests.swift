import Foundation
import HTTPServer
import Testing
import TestSupport

/// Issue 23 item 2: one host cannot take every connection. A connection from an address that
/// already has `maxConnectionsPerAddress` open is closed at once; at `maxConnections` the
/// longest-idle connections are closed to admit waiting clients; at start the open-file limit is
/// raised to what the connection limit needs.
@Suite("HTTPServer: one host cannot take every connection")
struct HTTPServerConnectionFloodTests {
    @Test("a connection past the per-address limit is closed at once; other addresses are served")
    func perAddressLimit() throws {
        try withHTTPTestServer(configure: { $0.maxConnectionsPerAddress = 3 }) { server throws in
            let held = try (0..<3).map { _ in try RawHTTPClient(port: server.port, sourceHost: "127.0.0.2") }
            #expect(eventually(timeout: .seconds(10)) { server.server.openConnections == 3 })
            let fourth = try RawHTTPClient(port: server.port, sourceHost: "127.0.0.2")
            #expect(fourth.waitForClose(timeout: .seconds(10)), "a fourth connection from 127.0.0.2 is closed")
            #expect(server.server.refusedConnections == 1)

            let other = try RawHTTPClient(port: server.port, sourceHost: "127.0.0.3")
            try other.send("GET /other HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(try other.readResponse().text == "GET /other 0")
            // The three held ones are served; once one closes, the address may connect again.
            try held[0].send("GET /held HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(try held[0].readResponse().text == "GET /held 0")
            held[1].close()
            #expect(eventually(timeout: .seconds(10)) { server.server.openConnections == 3 })
            let again = try RawHTTPClient(port: server.port, sourceHost: "127.0.0.2")
            try again.send("GET /again HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(try again.readResponse().text == "GET /again 0")
        }
    }

    @Test("at start the soft open-file limit covers maxConnections; beyond the hard limit the server refuses to start")
    func openFileLimit() throws {
        var limit = rlimit()
        #expect(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0)
        let hard = Int(clamping: limit.rlim_max)
        var tooMany = HTTPServerConfiguration(host: "127.0.0.1", port: 0)
        tooMany.maxConnections = hard
        let needed = HTTPServer.fileDescriptorsNeeded(by: tooMany)
        let refused = HTTPServer(configuration: tooMany, responder: HTTPClosureResponder.echo, logger: .init(label: "test"))
        #expect(throws: HTTPServerError.openFileLimit(needed: needed, hardLimit: hard)) { try refused.start() }

        let fitting = min(hard - 200, 4000)
        try withHTTPTestServer(configure: { $0.maxConnections = fitting }) { server throws in
            #expect(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0)
            #expect(Int(clamping: limit.rlim_cur) >= fitting)
            #expect(try server.roundTrip("GET / HTTP/1.1\r\nHost: h\r\n\r\n").status == 200)
        }
    }
}

/// The floods of issue 23 item 2, one at a time: each holds 10,000 client sockets in this
/// process (with the server's, about 11,000 descriptors; the tests raise `ulimit -n`). Each runs
/// on a thread of its own (`onOwnThread`), not on a cooperative thread.
@Suite("HTTPServer: connection floods from one address", .serialized)
struct HTTPServerConnectionFloodLoadTests {
    /// What a flood run measured.
    private struct FloodRun: Sendable {
        var slowest = Duration.zero
        var probes = 0
        /// Probes answered something else than the echo of their request.
        var wrongAnswers = 0
        var connectFailures = 0
        var openConnections = 0
        var refusedConnections = 0
        var evictedConnections = 0
        var summary = ""
    }

    /// Starts a server configured by `configure`, floods it with `count` connections from
    /// 127.0.0.2 and probes it from 127.0.0.3 every 100 ms while the flood opens its
    /// connections and for 3 s more; a probe not answered within `answerWithin` fails the test.
    private func flood(
        count: Int, answerWithin: Duration = .seconds(30), configure: @escaping @Sendable (inout HTTPServerConfiguration) -> Void
    ) async throws -> FloodRun {
        let openFiles = raiseOpenFileLimit(to: count + 2000)
        try #require(openFiles >= count + 2000, "ulimit -n must allow \(count + 2000) files, is \(openFiles)")
        return try await onOwnThread {
            try withHTTPTestServer(configure: {
                $0.backlog = 4096
                configure(&$0)
            }) { server in
                let flood = ConnectionFlood(port: server.port, sourceHost: "127.0.0.2", count: count)
                defer { flood.stop() }
                var run = try Self.probe(
                    server, from: "127.0.0.3", while: flood, count: count, after: .seconds(3), answerWithin: answerWithin)
                let http = server.server
                run.connectFailures = flood.connectFailures
                run.openConnections = http.openConnections
                run.refusedConnections = http.refusedConnections
                run.evictedConnections = http.evictedConnections
                run.summary =
                    "\(flood.opened) opened, \(flood.answered) answers, \(flood.closedByServer) closed by the server, "
                    + "\(run.refusedConnections) refused at accept, \(run.evictedConnections) idle connections evicted, "
                    + "\(run.openConnections) open; \(run.probes) probes from 127.0.0.3, slowest \(run.slowest)"
                return run
            }
        }
    }

    /// Probes the server from `sourceHost` every 100 ms while `flood` opens its connections and
    /// for `after` more, measuring each round trip (connect, request, response); a probe not
    /// answered within `answerWithin` throws.
    private static func probe(
        _ server: HTTPTestServer, from sourceHost: String, while flood: ConnectionFlood, count: Int, after: Duration,
        answerWithin: Duration
    ) throws -> FloodRun {
        let clock = ContinuousClock()
        var run = FloodRun()
        var floodOpenedAt: ContinuousClock.Instant?
        let giveUp = clock.now + .seconds(180)
        while clock.now < giveUp {
            if floodOpenedAt == nil && flood.opened + flood.connectFailures >= count { floodOpenedAt = clock.now }
            if let floodOpenedAt, clock.now - floodOpenedAt > after { break }
            let started = clock.now
            let client = try RawHTTPClient(port: server.port, sourceHost: sourceHost)
            try client.send("GET /probe HTTP/1.1\r\nHost: h\r\n\r\n")
            if try client.readResponse(timeout: answerWithin).text != "GET /probe 0" { run.wrongAnswers += 1 }
            run.slowest = max(run.slowest, clock.now - started)
            run.probes += 1
            client.close()
            Thread.sleep(forTimeInterval: 0.1)
        }
        return run
    }

    @Test("10,000 connections from 127.0.0.2: a client on 127.0.0.3 is served within 1 s throughout")
    func floodFromOneAddress() async throws {
        let count = SanitizerDetection.isActive ? 2000 : 10_000
        let run = try await flood(count: count) { _ in }
        print("connection flood from one address: \(run.summary)")
        #expect(run.probes >= 3 && run.wrongAnswers == 0)
        // Before, the probe waited in the backlog (timed out). The 1 s is a figure
        // measured by hand (0.03-0.5 s, RELIABILITY.md), not asserted: a shared CI machine under
        // load would make it flaky. The bound only catches a probe left in the backlog.
        #expect(run.slowest < .seconds(10))
        #expect(run.openConnections <= 256 + 2)
        #expect(run.refusedConnections >= count - 256 - run.connectFailures - 100)
    }

    /// The same flood with the per-address limit off (as behind a proxy) against a limit of
    /// 1,000: the flood's connections are idle once answered, and each client waiting in the
    /// backlog is accepted in place of the longest-idle one. The probe waits its turn in the
    /// backlog behind the flood's connects (about 1 s at worst in a debug build on 2 shared
    /// cores, RELIABILITY.md; 1-4 s in sanitizer runs, once 24 s); before, it waited for a
    /// connection to close by itself. Here nothing closes by itself for 600 s, so a probe answered
    /// within 90 s (its read's timeout) was admitted by an eviction, however loaded the machine.
    @Test("per-address limit off, 10,000 connections from 127.0.0.2 against 1,000 allowed: idle ones make room for 127.0.0.3")
    func floodEvictsIdle() async throws {
        let count = SanitizerDetection.isActive ? 2000 : 10_000
        let run = try await flood(count: count, answerWithin: .seconds(90)) {
            $0.maxConnectionsPerAddress = 0
            $0.maxConnections = 1000
            $0.keepAliveIdleTimeout = .seconds(600)
        }
        print("connection flood, limit off: \(run.summary)")
        // A probe waits its turn in the backlog behind the flood, so few fit in the flood's time:
        // each must be served, however many there were.
        #expect(run.probes >= 1 && run.wrongAnswers == 0)
        #expect(run.evictedConnections > 0)
        // Up to 64 beyond the limit while evicted connections are being closed.
        #expect(run.openConnections <= 1000 + 64)
    }
}
