// The serializer and the date line are the server's own, internal to it: the harness writes a
// response exactly as a connection does.
@testable import HTTPServer
import LocifyServer
import Synchronization
import TestSupport

/// Answers requests with an application's request pipeline in process, as Hummingbird's `.router`
/// test framework does: the request's bytes are parsed by the server's parser (its limits from the
/// test's HTTP settings), answered by `Application.responder` on the calling thread (`respond` for
/// an inline route, `answer` for a worker's), and the response is serialized as a connection
/// writes it and read back as a socket client reads it. No socket, event loop or worker pool is in
/// between, so what is left out is theirs: connection limits, timeouts, body admission before the
/// body arrives, keep-alive and long-poll waits (held by the event loop; a wait throws).
final class InProcessPipeline: Sendable {
    private let responder: any HTTPResponder
    private let limits: HTTPRequestParser.Limits
    private let dates = HTTPDateCache()
    /// Each request is a connection of its own (as `TestServer.request` opens one per request).
    private let connections = Atomic<UInt64>(0)

    /// The pipeline of `application` (started with `start(listening: false)`), parsing with the
    /// limits of the HTTP settings `dependencies` give.
    init(application: Application, dependencies: ApplicationDependencies) {
        responder = application.responder
        var http = HTTPServerConfiguration()
        dependencies.configureHTTP(&http)
        limits = HTTPRequestParser.Limits(configuration: http)
    }

    /// The response to the request whose bytes are `bytes` (one whole request).
    func send(_ bytes: [UInt8]) throws -> RawHTTPResponse {
        let id = connections.add(1, ordering: .relaxed).newValue
        let connection = ConnectionInfo(id: id, remoteAddress: "127.0.0.1:\(40_000 + id % 20_000)")
        var parser = HTTPRequestParser(limits: limits)
        var input = bytes[...]
        while true {
            switch parser.parse(Array(input)) {
            case .request(let request, _):
                let response = try answer(request, connection: connection)
                return try serialize(response, to: request)
            case .error(let error):
                // As a connection does: the application's rendering, and the connection closes.
                return try RawHTTPResponse.parse(
                    HTTPResponseSerializer.serialize(
                        responder.response(for: error), isResponseToHead: false, connection: .close,
                        dateLine: dates.currentLine()
                    ).flatMap { $0 })
            case .continueNeeded(let consumed), .head(_, _, let consumed):
                input = input.dropFirst(consumed)
            case .needMore:
                throw InProcessPipelineError.incompleteRequest
            }
        }
    }

    private func answer(_ request: HTTPRequest, connection: ConnectionInfo) throws -> HTTPResponse {
        if responder.executionMode(for: request) == .inline {
            return responder.respond(to: request, connection: connection)
        }
        switch responder.answer(to: request, connection: connection) {
        case .response(let response):
            return response
        case .wait(let wait):
            wait.waiter.end()
            throw InProcessPipelineError.waitNeedsEventLoop
        }
    }

    /// The response as a connection writes it (`Connection.queueResponse`: keep-alive unless the
    /// request or the response asks to close), read back as a client reads it.
    private func serialize(_ response: HTTPResponse, to request: HTTPRequest) throws -> RawHTTPResponse {
        let keepAlive = request.wantsKeepAlive && !response.headers.containsToken("close", in: "Connection")
        let directive: HTTPResponseSerializer.ConnectionDirective =
            keepAlive ? (request.version == .http1_0 ? .keepAlive : .persistentDefault) : .close
        let bytes = HTTPResponseSerializer.serialize(
            response, isResponseToHead: request.method == .HEAD, connection: directive, dateLine: dates.currentLine())
        return try RawHTTPResponse.parse(bytes.flatMap { $0 }, isResponseToHead: request.method == .HEAD)
    }
}

/// Why `InProcessPipeline` could not answer a request.
enum InProcessPipelineError: Error, Sendable {
    /// The bytes did not hold a whole request.
    case incompleteRequest
    /// The pipeline answered with a long-poll wait, which only a server's event loop holds: test
    /// it with `TestServer.start`.
    case waitNeedsEventLoop
}
