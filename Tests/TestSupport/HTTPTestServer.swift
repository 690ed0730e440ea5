import Dispatch
import Foundation
import HTTPServer
import Logging

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
