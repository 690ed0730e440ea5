import HTTPServer
import LocifyServer
import Logging
import TestSupport

/// Answers requests with an application's request pipeline in process, as Hummingbird's `.router`
/// test framework does: each request is a connection of `InProcessHTTPServer`, which runs a
/// server connection's own code (parser with the test's HTTP limits, body admission, keep-alive,
/// serializer), answered by `Application.responder` on the calling thread. The head and the body
/// arrive in two reads, as from a phone whose body follows its head, so the application decides
/// about every body from its head (`admitBody`) as over a socket. No socket, event loop or worker
/// pool is in between, so what is left out is theirs: connection limits, timeouts and long-poll
/// waits (held by the event loop; a wait throws).
final class InProcessPipeline: Sendable {
    private let server: InProcessHTTPServer

    /// The pipeline of `application` (started with `start(listening: false)`), with the HTTP
    /// settings `dependencies` give.
    init(application: Application, dependencies: ApplicationDependencies) {
        var http = HTTPServerConfiguration()
        dependencies.configureHTTP(&http)
        server = InProcessHTTPServer(
            configuration: http, responder: application.responder, logger: Logger(label: "in-process-pipeline"))
    }

    /// The response to the request whose bytes are `bytes` (one whole request).
    func send(_ bytes: [UInt8]) throws -> RawHTTPResponse {
        let headEnd = Self.endOfHead(in: bytes)
        let reads = headEnd < bytes.count ? [Array(bytes[..<headEnd]), Array(bytes[headEnd...])] : [bytes]
        let written = try server.exchange(reads, from: "127.0.0.1:40000")
        guard !written.isEmpty else { throw InProcessPipelineError.incompleteRequest }
        return try RawHTTPResponse.parse(written, isResponseToHead: bytes.starts(with: Array("HEAD ".utf8)))
    }

    /// Where the header section of `bytes` ends (after its empty line), or their end.
    private static func endOfHead(in bytes: [UInt8]) -> Int {
        let terminator: [UInt8] = [13, 10, 13, 10]
        guard bytes.count >= terminator.count else { return bytes.count }
        for start in 0...(bytes.count - terminator.count) where bytes[start..<start + terminator.count].elementsEqual(terminator) {
            return start + terminator.count
        }
        return bytes.count
    }
}

/// Why `InProcessPipeline` could not answer a request.
enum InProcessPipelineError: Error, Sendable {
    /// The bytes did not hold a whole request.
    case incompleteRequest
}
