import HTTPServer

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

    /// Where the closure runs, as the `mode` closure says.
    public func executionMode(for request: HTTPRequest) -> HTTPExecutionMode { mode(request) }

    /// The closure's answer.
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
