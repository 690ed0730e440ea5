import Dispatch
import Foundation
import Glibc
import HTTPServer
import Synchronization
import Testing
import TestSupport

/// The waiters of `WaitingResponder`, by request name, and what became of them.
private final class WaitBoard: Sendable {
    private struct State {
        var waiters: [String: HTTPWaiter] = [:]
        var ended: [String] = []
        var rechecks: [String: Int] = [:]
        /// Names whose rechecks wait again instead of answering.
        var keepWaiting: Set<String> = []
        var blocked = 0
    }

    private let state = Mutex(State())

    func register(_ name: String, _ waiter: HTTPWaiter) {
        state.withLock { $0.waiters[name] = waiter }
    }

    func waiter(_ name: String) -> HTTPWaiter? {
        state.withLock { $0.waiters[name] }
    }

    func wake(_ name: String) {
        waiter(name)?.wake()
    }

    func end(_ name: String) {
        state.withLock { $0.ended.append(name) }
    }

    var ended: [String] { state.withLock { $0.ended } }

    var blocked: Int { state.withLock { $0.blocked } }

    func noteBlocked() {
        state.withLock { $0.blocked += 1 }
    }

    func rechecks(_ name: String) -> Int { state.withLock { $0.rechecks[name] ?? 0 } }

    func keepWaiting(_ name: String, _ keep: Bool) {
        state.withLock { state in
            if keep { state.keepWaiting.insert(name) } else { state.keepWaiting.remove(name) }
        }
    }

    /// Counts a recheck of `name`; true when it should wait again.
    func recheck(_ name: String) -> Bool {
        state.withLock { state in
            state.rechecks[name, default: 0] += 1
            return state.keepWaiting.contains(name)
        }
    }
}

/// `/wait/<name>` waits (`timeout`), answering `expired <name>` at its deadline and `woken
/// <name>` after a wake; `/wait-woken/<name>` is woken by its own handler before the wait begins;
/// `/block` holds its worker until `release` is signalled; anything else answers `direct <path>`.
private struct WaitingResponder: HTTPResponder {
    let board: WaitBoard
    let timeout: Duration
    let release: DispatchSemaphore

    func respond(to request: HTTPRequest, connection: ConnectionInfo) -> HTTPResponse {
        if request.path == "/block" {
            board.noteBlocked()
            _ = release.wait(timeout: .now() + 60)
        }
        return Self.text("direct \(request.path)")
    }

    func answer(to request: HTTPRequest, connection: ConnectionInfo) -> HTTPAnswer {
        let parts = request.path.split(separator: "/").map(String.init)
        guard parts.count == 2, parts[0] == "wait" || parts[0] == "wait-woken" else {
            return .response(respond(to: request, connection: connection))
        }
        let name = parts[1]
        let board = self.board
        // Weakly: the board keeps its waiters, so a strong capture would be a cycle (a leak
        // LeakSanitizer reports).
        let waiter = HTTPWaiter { [weak board] _ in board?.end(name) }
        board.register(name, waiter)
        if parts[0] == "wait-woken" { waiter.wake() }
        return .wait(Self.wait(name, waiter: waiter, timeout: timeout, board: board))
    }

    private static func wait(_ name: String, waiter: HTTPWaiter, timeout: Duration, board: WaitBoard) -> HTTPWait {
        HTTPWait(
            waiter: waiter, timeout: timeout, expire: { text("expired \(name)") },
            recheck: {
                board.recheck(name) ? .wait(wait(name, waiter: waiter, timeout: timeout, board: board)) : .response(text("woken \(name)"))
            })
    }

    static func text(_ text: String) -> HTTPResponse {
        HTTPResponse(status: .ok, headers: ["Content-Type": "text/plain"], body: Array(text.utf8))
    }
}

@Suite("HTTPServer: requests held without a thread (HTTPWait, long-poll)")
struct HTTPServerWaitTests {
    private let board = WaitBoard()
    private let release = DispatchSemaphore(value: 0)

    private func server(
        timeout: Duration = .seconds(60), configure: (inout HTTPServerConfiguration) -> Void = { _ in }
    ) throws -> HTTPTestServer {
        try HTTPTestServer(responder: WaitingResponder(board: board, timeout: timeout, release: release), configure: configure)
    }

    private func hold(_ server: HTTPTestServer, _ name: String) throws -> RawHTTPClient {
        let client = try server.client()
        try client.send("GET /wait/\(name) HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(eventually { board.waiter(name) != nil })
        return client
    }

    @Test("held requests keep no worker: with one worker thread, three held requests and a fourth request answered")
    func heldRequestsHoldNoWorker() throws {
        let server = try server { $0.workerThreads = 1 }
        defer { server.stop() }
        let held = try ["a", "b", "c"].map { try hold(server, $0) }
        #expect(eventually { server.server.waitingRequests == 3 })
        #expect(try server.roundTrip("GET /plain HTTP/1.1\r\nHost: h\r\n\r\n").text == "direct /plain")

        board.wake("b")
        let woken = try held[1].readResponse()
        #expect(woken.text == "woken b")
        #expect(woken.headers["Connection"] == nil, "kept alive")
        #expect(eventually { server.server.waitingRequests == 2 })
        #expect(held[0].staysQuiet(for: .milliseconds(200)) && held[2].staysQuiet(for: .milliseconds(200)))
        // The connection serves its next request as usual.
        try held[1].send("GET /after HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(try held[1].readResponse().text == "direct /after")
        #expect(board.ended == ["b"])
    }

    @Test("the deadline answers expire(); a recheck that waits again keeps the first deadline")
    func deadline() throws {
        let clock = ManualClock<Duration>(.seconds(1000))
        let server = try server(timeout: .seconds(10)) { $0.clock = clock.httpClock }
        defer { server.stop() }
        let client = try hold(server, "a")
        #expect(eventually { server.server.waitingRequests == 1 })
        clock.advance(by: .seconds(6))
        board.keepWaiting("a", true)
        board.wake("a")
        #expect(eventually { board.rechecks("a") == 1 && server.server.waitingRequests == 1 })
        #expect(client.staysQuiet(for: .milliseconds(200)))
        // 11 s after the first hold: past the first deadline, though 5 s after the second hold.
        clock.advance(by: .seconds(5))
        let response = try client.readResponse()
        #expect(response.text == "expired a")
        #expect(response.headers["Connection"] == nil)
        #expect(board.ended == ["a"])
        #expect(server.server.waitingRequests == 0)

        // The next request on the connection gets a deadline of its own.
        board.keepWaiting("b", false)
        try client.send("GET /wait/b HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(eventually { server.server.waitingRequests == 1 })
        clock.advance(by: .seconds(9))
        #expect(client.staysQuiet(for: .milliseconds(200)))
        clock.advance(by: .seconds(2))
        #expect(try client.readResponse().text == "expired b")
    }

    @Test("a client that hangs up ends its wait: the waiter ends, the connection closes")
    func hangUp() throws {
        let server = try server()
        defer { server.stop() }
        let client = try hold(server, "a")
        #expect(eventually { server.server.waitingRequests == 1 })
        client.close()
        #expect(eventually { board.ended == ["a"] })
        #expect(eventually { server.server.waitingRequests == 0 && server.server.openConnections == 0 })
        board.wake("a")  // too late: nothing happens
        #expect(board.rechecks("a") == 0)
    }

    @Test("a wake before the request is held is not lost: the recheck runs as soon as it is")
    func wakeBeforeHold() throws {
        let server = try server()
        defer { server.stop() }
        #expect(try server.roundTrip("GET /wait-woken/a HTTP/1.1\r\nHost: h\r\n\r\n").text == "woken a")
        #expect(board.ended == ["a"])
        #expect(server.server.waitingRequests == 0)
    }

    @Test("a request pipelined behind a held one waits for it and is answered after it")
    func pipelinedBehindHeld() throws {
        let server = try server()
        defer { server.stop() }
        let client = try server.client()
        try client.send("GET /wait/a HTTP/1.1\r\nHost: h\r\n\r\nGET /next HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(eventually { server.server.waitingRequests == 1 })
        #expect(client.staysQuiet(for: .milliseconds(200)))
        board.wake("a")
        #expect(try client.readResponse().text == "woken a")
        #expect(try client.readResponse().text == "direct /next")
    }

    @Test("answerWaitingRequests answers every held request with Connection: close; later requests wait as usual")
    func answerWaitingRequests() throws {
        let server = try server()
        defer { server.stop() }
        let held = try ["a", "b"].map { try hold(server, $0) }
        #expect(eventually { server.server.waitingRequests == 2 })
        server.server.answerWaitingRequests()
        for (client, name) in zip(held, ["a", "b"]) {
            let response = try client.readResponse()
            #expect(response.text == "expired \(name)")
            #expect(response.headers["Connection"] == "close")
            #expect(client.waitForClose())
        }
        #expect(Set(board.ended) == ["a", "b"])
        let later = try hold(server, "c")
        #expect(eventually { server.server.waitingRequests == 1 })
        #expect(later.staysQuiet(for: .milliseconds(200)))
    }

    @Test("shutdown answers held requests at once instead of holding them for the grace period")
    func shutdownAnswersHeld() throws {
        let server = try server()
        let held = try ["a", "b"].map { try hold(server, $0) }
        #expect(eventually { server.server.waitingRequests == 2 })
        let stopping = BackgroundThread { server.stop(gracePeriod: .seconds(600)) }
        for (client, name) in zip(held, ["a", "b"]) {
            let response = try client.readResponse()
            #expect(response.text == "expired \(name)")
            #expect(response.headers["Connection"] == "close")
        }
        #expect(stopping.wait(timeout: .seconds(60)), "nothing was left for the grace period")
        #expect(Set(board.ended) == ["a", "b"])
    }

    @Test("a wake finding the worker queue full answers expire() with Connection: close")
    func recheckQueueFull() throws {
        let server = try server {
            $0.workerThreads = 1
            $0.maxQueuedRequests = 1
        }
        defer {
            release.signal()
            release.signal()
            server.stop()
        }
        let client = try hold(server, "a")
        #expect(eventually { server.server.waitingRequests == 1 })
        let blocked = try server.client()
        try blocked.send("GET /block HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(eventually { board.blocked == 1 })
        let queued = try server.client()
        try queued.send("GET /queued HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(eventually { server.server.workerQueueDepth == 1 })
        board.wake("a")
        let response = try client.readResponse()
        #expect(response.text == "expired a")
        #expect(response.headers["Connection"] == "close")
        #expect(board.rechecks("a") == 0)
        release.signal()
        #expect(try blocked.readResponse().text == "direct /block")
        #expect(try queued.readResponse().text == "direct /queued")
    }
}
