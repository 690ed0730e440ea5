import Dispatch
import Foundation
import HTTPServer
import Logging

/// An `HTTPResponder` made of closures, for tests.
public struct HTTPClosureResponder: HTTPResponder {
    private let mode: @Sendable (HTTPRequest) -> HTTPExecutionMode
    private let handler: @Sendable (HTTPRequest, ConnectionInfo) -> HTTPResponse

    /// Answers with `handler`, on the thread `mode` picks (default: the worker pool).
    public init(
        mode: @escaping @Sendable (HTTPRequest) -> HTTPExecutionMode = { _ in .worker },
        handler: @escaping @Sendable (HTTPRequest, ConnectionInfo) -> HTTPResponse
    ) {
        self.mode = mode
        self.handler = handler
    }

    public func executionMode(for request: HTTPRequest) -> HTTPExecutionMode { mode(request) }

    public func respond(to request: HTTPRequest, connection: ConnectionInfo) -> HTTPResponse {
        handler(request, connection)
    }

    /// Echoes method, path, query and body size as text: `GET /a?b 0`.
    public static let echo = HTTPClosureResponder { request, _ in
        HTTPResponse(
            status: .ok, headers: ["Content-Type": "text/plain"],
            body: Array("\(request.method) \(request.path)\(request.query.map { "?\($0)" } ?? "") \(request.body.count)".utf8))
    }
}

/// A running `HTTPServer` on an ephemeral port of 127.0.0.1, with test-sized settings.
public final class HTTPTestServer: Sendable {
    /// The server.
    public let server: HTTPServer

    /// Starts a server for `responder`. `configure` adjusts the configuration (port 0, 2 I/O
    /// threads, 4 workers, 50 ms timer resolution by default). Set `HTTP_TEST_LOG=debug` to see
    /// the server's logs.
    public init(
        responder: any HTTPResponder,
        configure: (inout HTTPServerConfiguration) -> Void = { _ in }
    ) throws {
        var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.ioThreads = 2
        configuration.workerThreads = 4
        configuration.timerResolution = .milliseconds(50)
        configuration.lingeringCloseTimeout = .milliseconds(500)
        configure(&configuration)
        server = HTTPServer(configuration: configuration, responder: responder, logger: Self.makeLogger())
        try server.start()
    }

    /// The listening port.
    public var port: Int { server.localPort }

    /// A new client connected to the server.
    public func client() throws -> RawHTTPClient {
        try RawHTTPClient(port: port)
    }

    /// Sends `request` on a new connection and reads one response.
    public func roundTrip(_ request: String, timeout: Duration = .seconds(10)) throws -> RawHTTPResponse {
        let client = try client()
        try client.send(request)
        return try client.readResponse(timeout: timeout)
    }

    /// Shuts the server down.
    public func stop(gracePeriod: Duration = .seconds(2)) {
        server.shutdown(gracePeriod: gracePeriod)
    }

    private static func makeLogger() -> Logger {
        guard let level = ProcessInfo.processInfo.environment["HTTP_TEST_LOG"].flatMap(Logger.Level.init(rawValue:))
        else {
            return Logger(label: "http-test") { _ in SwiftLogNoOpLogHandler() }
        }
        var logger = Logger(label: "http-test") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = level
        return logger
    }
}

/// Runs `body` with a fresh test server and shuts it down afterwards, even when `body` throws.
public func withHTTPTestServer<Result>(
    responder: any HTTPResponder = HTTPClosureResponder.echo,
    configure: (inout HTTPServerConfiguration) -> Void = { _ in },
    _ body: (HTTPTestServer) throws -> Result
) throws -> Result {
    let server = try HTTPTestServer(responder: responder, configure: configure)
    defer { server.stop() }
    return try body(server)
}

/// A job on a dedicated background thread (never the Swift concurrency pool), joined with `wait`.
public final class HTTPBackgroundJob: Sendable {
    private let done = DispatchSemaphore(value: 0)

    /// Starts `body` on its own thread.
    public init(_ body: @escaping @Sendable () -> Void) {
        let done = self.done
        let thread = Thread {
            body()
            done.signal()
        }
        thread.start()
    }

    /// Waits for the job; false if it did not finish within `timeout`.
    @discardableResult
    public func wait(timeout: Duration = .seconds(30)) -> Bool {
        done.wait(timeout: .now() + .milliseconds(timeout.milliseconds)) == .success
    }
}
