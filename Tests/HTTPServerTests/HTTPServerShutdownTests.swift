import Dispatch
import Foundation
import Glibc
import HTTPServer
import Logging
import Synchronization
import Testing
import TestSupport

@Suite("HTTPServer: start and graceful shutdown")
struct HTTPServerShutdownTests {
    @Test("shutdown lets an in-flight request finish with Connection: close, then refuses new connections")
    func gracefulShutdown() throws {
        let handlerStarted = DispatchSemaphore(value: 0)
        let responder = HTTPClosureResponder { request, _ in
            handlerStarted.signal()
            usleep(300_000)
            return HTTPResponse(status: .ok, body: Array("finished \(request.path)".utf8))
        }
        let server = try HTTPTestServer(responder: responder)
        let port = server.port
        let idle = try server.client()
        let client = try server.client()
        try client.send("GET /slow HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(handlerStarted.wait(timeout: .now() + 20) == .success)
        let stopping = BackgroundThread { server.stop(gracePeriod: .seconds(10)) }
        // The idle keep-alive connection is closed at once; the in-flight request completes.
        #expect(idle.waitForClose())
        let response = try client.readResponse(timeout: .seconds(20))
        #expect(response.text == "finished /slow")
        #expect(response.headers["Connection"] == "close")
        #expect(client.waitForClose())
        #expect(stopping.wait())
        #expect(throws: RawHTTPClientError.connectFailed(errno: ECONNREFUSED)) { try RawHTTPClient(port: port) }
        #expect(server.server.openConnections == 0)
    }

    @Test("after the grace period, connections still in a handler or mid-request are closed")
    func graceExpires() throws {
        let handlerStarted = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let responder = HTTPClosureResponder { _, _ in
            handlerStarted.signal()
            _ = release.wait(timeout: .now() + 30)
            return HTTPResponse(status: .ok)
        }
        let server = try HTTPTestServer(responder: responder)
        let stuck = try server.client()
        try stuck.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
        let halfway = try server.client()
        try halfway.send("GET / HTTP/1.1\r\nHost: h\r\n")
        #expect(handlerStarted.wait(timeout: .now() + 20) == .success)
        server.stop(gracePeriod: .milliseconds(200))
        #expect(stuck.waitForClose())
        #expect(halfway.waitForClose())
        release.signal()
        #expect(eventually { server.server.openConnections == 0 })
    }

    @Test("shutdown may be called twice, from several threads, and before start")
    func repeatedShutdown() throws {
        let server = try HTTPTestServer(responder: HTTPClosureResponder.echo)
        let jobs = (0..<3).map { _ in BackgroundThread { server.stop(gracePeriod: .seconds(1)) } }
        for job in jobs { #expect(job.wait()) }
        server.server.waitUntilStopped()
        let neverStarted = HTTPServer(
            configuration: HTTPServerConfiguration(port: 0), responder: HTTPClosureResponder.echo,
            logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        neverStarted.shutdown(gracePeriod: .seconds(1))
        neverStarted.waitUntilStopped()
        #expect(throws: HTTPServerError.alreadyStarted) { try neverStarted.start() }
    }

    @Test("start fails with a typed error naming bind and EADDRINUSE when the port is taken; twice is refused")
    func startErrors() throws {
        let running = try HTTPTestServer(responder: HTTPClosureResponder.echo)
        defer { running.stop() }
        let logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
        let clash = HTTPServer(
            configuration: HTTPServerConfiguration(port: running.port), responder: HTTPClosureResponder.echo, logger: logger)
        #expect(throws: HTTPServerError.systemCall("bind", errno: EADDRINUSE)) { try clash.start() }
        #expect(throws: HTTPServerError.alreadyStarted) { try running.server.start() }
        var invalid = HTTPServerConfiguration(port: 0)
        invalid.workerThreads = 0
        #expect(throws: HTTPServerError.invalidConfiguration("workerThreads must be at least 1")) {
            try HTTPServer(configuration: invalid, responder: HTTPClosureResponder.echo, logger: logger).start()
        }
        let unresolvable = HTTPServer(
            configuration: HTTPServerConfiguration(host: "no-such-host.invalid", port: 0),
            responder: HTTPClosureResponder.echo, logger: logger)
        #expect(throws: HTTPServerError.self) { try unresolvable.start() }
    }

    @Test("shutdown can run from a signal-handling Dispatch source")
    func fromDispatchSource() throws {
        let server = try HTTPTestServer(responder: HTTPClosureResponder.echo)
        let queue = DispatchQueue(label: "signals")
        let source = DispatchSource.makeUserDataAddSource(queue: queue)
        source.setEventHandler { server.server.shutdown(gracePeriod: .seconds(1)) }
        source.activate()
        source.add(data: 1)
        server.server.waitUntilStopped()
        source.cancel()
        #expect(server.server.openConnections == 0)
    }

    @Test("metrics: open connections and worker queue depth")
    func metrics() throws {
        let release = DispatchSemaphore(value: 0)
        let responder = HTTPClosureResponder { _, _ in
            _ = release.wait(timeout: .now() + 30)
            return HTTPResponse(status: .ok)
        }
        try withHTTPTestServer(responder: responder, configure: { $0.workerThreads = 1 }) { server in
            let clients = try (0..<3).map { _ in try server.client() }
            for client in clients { try client.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n") }
            #expect(eventually { server.server.openConnections == 3 })
            #expect(eventually { server.server.workerQueueDepth == 2 })
            for _ in clients { release.signal() }
            for client in clients { #expect(try client.readResponse().status == 200) }
            #expect(server.server.workerQueueDepth == 0)
        }
    }
}
