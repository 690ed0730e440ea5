import Dispatch
import Foundation
import Glibc
import HTTPServer
import Synchronization
import Testing
import TestSupport

/// `/wait` is a long-poll held two minutes; `/big` answers 8 MiB (the same bytes for every
/// request: more than the sockets' buffers take, so most of it waits in the server); anything
/// else answers `ok <path>`.
private struct BusyResponder: HTTPResponder {
    private static let big = [UInt8](repeating: 0x61, count: 8 * 1024 * 1024)

    func respond(to request: HTTPRequest, connection: ConnectionInfo) -> HTTPResponse {
        HTTPResponse(status: .ok, body: request.path == "/big" ? Self.big : Array("ok \(request.path)".utf8))
    }

    func answer(to request: HTTPRequest, connection: ConnectionInfo) -> HTTPAnswer {
        guard request.path == "/wait" else { return .response(respond(to: request, connection: connection)) }
        return .wait(
            HTTPWait(
                waiter: HTTPWaiter(), timeout: .seconds(120), expire: { HTTPResponse(status: .ok, body: Array("expired".utf8)) },
                recheck: { .response(HTTPResponse(status: .ok, body: Array("woken".utf8))) }))
    }
}

/// Issue 35 item 2: connections that are never idle are evicted too. At `maxConnections`, 100
/// busy connections from 127.0.0.2 (none of them ever idle) must not keep a client from
/// 127.0.0.3 out: a connection of the address holding the most makes room, busy or not. Before,
/// only idle connections were closed, and the new client waited in the backlog for as long as the
/// busy ones pleased (these tests then failed at the client's 30 s).
@Suite("HTTPServer: at the connection limit, busy connections of the address holding the most make room", .serialized)
struct HTTPServerBusyEvictionTests {
    /// Fills a server allowing 100 connections with 100 clients from 127.0.0.2 doing `keepBusy`,
    /// waits until `isBusy`, then connects from 127.0.0.3 and expects an answer.
    private func expectNewClientAnswered(
        _ pattern: String, isBusy: @escaping @Sendable (HTTPServer) -> Bool = { _ in true },
        keepBusy: @escaping @Sendable (RawHTTPClient, BusyClients) throws -> Void
    ) async throws {
        let openFiles = raiseOpenFileLimit(to: 1000)
        try #require(openFiles >= 1000, "ulimit -n must allow 1000 files, is \(openFiles)")
        try await onOwnThread {
            try withHTTPTestServer(responder: BusyResponder(), configure: { $0.maxConnections = 100 }) { server in
                let busy = BusyClients(port: server.port, sourceHost: "127.0.0.2", count: 100, keepBusy: keepBusy)
                defer { busy.stop() }
                #expect(eventually(timeout: .seconds(60)) { server.server.openConnections == 100 && isBusy(server.server) })
                let started = ContinuousClock.now
                let client = try RawHTTPClient(port: server.port, sourceHost: "127.0.0.3")
                try client.send("GET /new HTTP/1.1\r\nHost: h\r\n\r\n")
                let response = try client.readResponse(timeout: .seconds(20))
                print("busy eviction, \(pattern): the client on 127.0.0.3 was answered in \(ContinuousClock.now - started)")
                #expect(response.text == "ok /new")
                // Its place was taken from 127.0.0.2 (the round runs just after the accept).
                #expect(eventually(timeout: .seconds(30)) { server.server.evictedConnections >= 1 })
            }
        }
    }

    @Test("100 connections each sending the first byte of their next request: a new client is answered")
    func tricklingHeads() async throws {
        try await expectNewClientAnswered("trickled heads") { client, busy in
            while !busy.isStopping {
                try client.send("G")
                guard busy.pause(1) else { return }
                try client.send("ET /trickle HTTP/1.1\r\nHost: h\r\n\r\n")
                _ = try client.readResponse(timeout: .seconds(30))
            }
        }
    }

    @Test("100 connections reading 8 MiB responses at 1.6 KB/s: a new client is answered")
    func slowReaders() async throws {
        // Every response waits in the server (more than 2 MiB of each), none is idle.
        try await expectNewClientAnswered("slow readers", isBusy: { $0.bufferedConnectionBytes >= 100 * 2 * 1024 * 1024 }) {
            client, busy in
            try busy.readSlowly("GET /big HTTP/1.1\r\nHost: h\r\n\r\n", on: client)
        }
    }

    @Test("100 connections holding long-polls: a new client is answered")
    func heldLongPolls() async throws {
        try await expectNewClientAnswered("held long-polls", isBusy: { $0.waitingRequests == 100 }) { client, busy in
            try client.send("GET /wait HTTP/1.1\r\nHost: h\r\n\r\n")
            while !busy.isStopping {
                do throws(RawHTTPClientError) {
                    _ = try client.readResponse(timeout: .milliseconds(200))
                    return
                } catch .timedOut {
                    continue
                }
            }
        }
    }
}

@Suite("HTTPServer: a connection's total header time is bounded")
struct HTTPServerHeaderTimeBudgetTests {
    /// Each request's head takes 0.3 s (well within the 2 s header timeout): before, the
    /// connection served them forever; now, once its heads took 2 s together, a response closes it.
    @Test("a client sending each next request's first byte, then the rest 0.3 s later, is closed once its heads took the header timeout")
    func tricklingClientIsClosed() throws {
        try withHTTPTestServer(configure: { $0.headerReadTimeout = .seconds(2) }) { server in
            let client = try server.client()
            var requests = 0
            var closed = false
            while requests < 30 && !closed {
                try client.send("G")
                Thread.sleep(forTimeInterval: 0.3)
                try client.send("ET /r\(requests) HTTP/1.1\r\nHost: h\r\n\r\n")
                let response = try client.readResponse()
                #expect(response.status == 200)
                requests += 1
                closed = response.headers["Connection"] == "close"
            }
            print("header time budget: closed after \(requests) requests")
            #expect(closed)
            #expect(client.waitForClose())
        }
    }
}
