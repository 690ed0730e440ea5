import Logging

/// A server without sockets or threads, for harnesses that test an application's request
/// pipeline in process. Each `exchange` is one connection whose client's reads go through a
/// server connection's own code (`Connection`): the parser with the configuration's limits, body
/// admission (`HTTPResponder.admitBody` on a head whose body comes in a later read, and the body
/// budget), the keep-alive rule, the serializer and the `Date` line. The responder answers on the
/// calling thread, as a worker would. What it leaves out is the event loop's: timeouts,
/// connection limits, the socket's reads and writes, and waits (`HTTPWait`), which only a loop
/// holds.
public final class InProcessHTTPServer: Sendable {
    private let context: ServerContext

    /// A server answering with `responder` under `configuration`'s limits (its address, threads
    /// and timeouts are not used).
    public init(configuration: HTTPServerConfiguration, responder: any HTTPResponder, logger: Logger) {
        context = ServerContext(
            configuration: configuration, responder: responder, logger: logger, counters: ServerCounters(),
            acceptorWakeFD: -1)
    }

    /// Serves one connection from `remoteAddress` (`address:port`) whose client sends `reads`, each
    /// arriving as one read of the socket, and returns every byte the connection writes in answer
    /// (a `100 Continue` included), up to its close or the end of the reads.
    public func exchange(_ reads: [[UInt8]], from remoteAddress: String) throws(InProcessHTTPError) -> [UInt8] {
        let id = context.counters.nextConnectionID.add(1, ordering: .relaxed).oldValue
        let connection = Connection(fd: -1, info: ConnectionInfo(id: id, remoteAddress: remoteAddress), limits: context.limits)
        defer { connection.releaseBodyBudget(context: context) }
        var written: [UInt8] = []
        for read in reads where !connection.closeAfterOutput {
            read.withUnsafeBytes { input in
                let now = context.now()
                let used = connection.consume(input, now: now, context: context)
                connection.keepUnparsed(input, from: used, now: now)
            }
            try advance(connection)
            written += connection.output.takeAll()
        }
        return written
    }

    /// Answers what the connection's input holds, as the event loop and a worker do, until it
    /// needs more input or closes.
    private func advance(_ connection: Connection) throws(InProcessHTTPError) {
        while true {
            if connection.workerDecision != nil {
                connection.applyWorkerDecision(now: context.now(), context: context)
            } else if let awaiting = connection.headAwaitingDecision {
                connection.decideAboutBody(of: awaiting.head, context: context)
            } else if let ready = connection.readyRequest {
                connection.readyRequest = nil
                let response: HTTPResponse
                switch ready.mode == .inline
                    ? .response(context.responder.respond(to: ready.request, connection: connection.info))
                    : context.responder.answer(to: ready.request, connection: connection.info)
                {
                case .response(let answer):
                    response = answer
                case .wait(let wait):
                    wait.waiter.end()
                    throw .waitNeedsEventLoop
                }
                connection.queueResponse(response, to: ready.request, context: context)
            } else if !connection.closeAfterOutput && connection.hasUnparsedInput {
                connection.consumeUnparsedInput(now: context.now(), context: context)
            } else {
                return
            }
        }
    }
}

/// Why `InProcessHTTPServer` could not answer.
public enum InProcessHTTPError: Error, Sendable {
    /// The application answered with a long-poll wait, which only a server's event loop holds.
    case waitNeedsEventLoop
}
