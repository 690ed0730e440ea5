import Glibc

/// One client connection: its socket, parser, pending output and the bookkeeping of its event
/// loop.
///
/// Ownership protocol (why `@unchecked Sendable` is safe): a connection is owned by exactly one
/// thread at a time. Its event loop's thread owns it from adoption on; when a request goes to the
/// worker pool the loop sets `withWorker`, stops touching the "owner" fields below and hands the
/// connection over through the pool's mutex-protected queue; the worker runs the handler, queues
/// the response, may try a non-blocking write, and hands the connection back through the loop's
/// mutex-protected inbox. Those two mutexes order every hand-over (happens-before). The fields
/// marked "loop" are only ever touched on the loop's thread (epoll events for a connection held
/// by a worker only set `mightBeReadable`). The socket is closed only by its owner: the loop, or
/// after the loop has stopped, the worker or pool holding it.
// safe because of the ownership protocol above: one owning thread at a time, hand-overs through mutexes.
final class Connection: @unchecked Sendable {
    /// Which timeout the connection's deadline stands for.
    enum DeadlineKind {
        case none
        /// Waiting for the first byte of a request: close silently.
        case idle
        /// Receiving the request line and header fields: 408.
        case head
        /// Receiving the body: 408.
        case body
        /// A response is stuck in the socket: close.
        case write
        /// Draining unread input after the last response: close.
        case linger
        /// A held request's wait is over: answer it (`HTTPWait.expire`).
        case wait
    }

    let fd: Int32
    let info: ConnectionInfo

    // Owner fields.
    var parser: HTTPRequestParser
    var output = OutputQueue()
    /// Close once `output` is written (error response, `Connection: close`, HTTP/1.0, draining).
    var closeAfterOutput = false

    /// Bytes of the server's body budget this connection holds: its current request's body,
    /// reserved when the header section arrived (or when the whole request arrived at once),
    /// until the response is queued or the connection closes.
    var reservedBodyBytes = 0

    // Loop fields.
    /// The body being received has its reservation (or was refused).
    var bodyAdmitted = false
    var withWorker = false
    var readyRequest: (request: HTTPRequest, mode: HTTPExecutionMode)?
    /// Input read but not parsed yet (pipelined requests), from `unparsedStart`.
    var unparsed: [UInt8] = []
    var unparsedStart = 0
    /// The socket may hold unread bytes (set by epoll events, cleared by a short read / EAGAIN).
    var mightBeReadable = false
    /// epoll reported the peer's FIN/RST (or an error): keep reading until recv reports it.
    var peerHungUp = false
    var lingering = false
    var deadline: Int64 = .max
    var deadlineKind: DeadlineKind = .none
    var requestsParsed = 0

    // Waits (`HTTPWait`, EventLoop+Waits.swift).
    /// The request its handler answered with a wait, set by the worker (owner) for the loop to
    /// hold when the connection comes back.
    var arrivingWait: HeldRequest?
    /// The request the loop holds (loop).
    var heldRequest: HeldRequest?
    /// When the current request's wait ends, set when it is first held (loop).
    var waitDeadline: Int64?

    init(fd: Int32, info: ConnectionInfo, limits: HTTPRequestParser.Limits) {
        self.fd = fd
        self.info = info
        self.parser = HTTPRequestParser(limits: limits)
    }

    var hasUnparsedInput: Bool { unparsedStart < unparsed.count }

    /// Feeds `input` to the parser until a request is complete, an error occurs or the input is
    /// used up. Returns how many bytes were used. Loop thread only.
    func consume(_ input: UnsafeRawBufferPointer, context: ServerContext) -> Int {
        var offset = 0
        while offset < input.count && readyRequest == nil && !closeAfterOutput {
            switch parser.parse(UnsafeRawBufferPointer(rebasing: input[offset...])) {
            case .needMore:
                offset = input.count
                if parser.phase == .body && !bodyAdmitted {
                    _ = admitBody(context: context)
                }
            case .continueNeeded(let used):
                offset += used
                // 100 Continue only for a body that fits the budget; otherwise the 503 goes out.
                guard admitBody(context: context) else { break }
                // RFC 9110 10.1.1: a server may omit 100 Continue once body bytes have arrived.
                if offset == input.count {
                    output.append(HTTPResponseSerializer.continueResponse)
                }
            case .request(let request, let used):
                offset += used
                guard admitCompleteBody(of: request, context: context) else { break }
                requestsParsed += 1
                deadlineKind = .none
                deadline = .max
                readyRequest = (request, context.responder.executionMode(for: request))
            case .error(let error):
                context.logger.debug(
                    "rejected a malformed request",
                    metadata: ["connection": "\(info.id)", "status": "\(error.status.code)", "reason": "\(error.reason)"])
                queueError(error, context: context)
                offset = input.count
            }
        }
        return offset
    }

    /// Reserves the budget for the body whose header section just arrived: its Content-Length,
    /// or the largest body allowed when it is chunked. When it does not fit, queues the 503 and
    /// returns false. Loop thread only.
    private func admitBody(context: ServerContext) -> Bool {
        bodyAdmitted = true
        let wanted = parser.bodyContentLength ?? context.configuration.maxBodyBytes
        guard context.reserveBodyBytes(wanted) else {
            refuseOverBudget(context: context)
            return false
        }
        reservedBodyBytes += wanted
        return true
    }

    /// Settles the reservation of a complete request: shrinks it to the body received (a chunked
    /// body reserved the largest size), or reserves a body that arrived whole with its header
    /// section. False (and the 503 queued) when that body does not fit. Loop thread only.
    private func admitCompleteBody(of request: HTTPRequest, context: ServerContext) -> Bool {
        defer { bodyAdmitted = false }
        if bodyAdmitted {
            let excess = reservedBodyBytes - request.body.count
            if excess > 0 {
                context.releaseBodyBytes(excess)
                reservedBodyBytes -= excess
            }
            return true
        }
        guard context.reserveBodyBytes(request.body.count) else {
            refuseOverBudget(context: context)
            return false
        }
        reservedBodyBytes += request.body.count
        return true
    }

    private func refuseOverBudget(context: ServerContext) {
        context.logger.debug(
            "refused a request body over the body budget",
            metadata: ["connection": "\(info.id)", "budget": "\(context.configuration.maxBufferedBodyBytes)"])
        queueError(context.overloaded("request body budget exhausted"), context: context)
    }

    /// Returns the connection's share of the body budget (response queued, error, close).
    /// Owner only; idempotent.
    func releaseBodyBudget(context: ServerContext) {
        context.releaseBodyBytes(reservedBodyBytes)
        reservedBodyBytes = 0
    }

    /// Feeds the buffered pipelined input. Loop thread only.
    func consumeUnparsedInput(context: ServerContext) {
        let pending = unparsed
        unparsed = []
        let used = pending.withUnsafeBytes { bytes in
            consume(UnsafeRawBufferPointer(rebasing: bytes[unparsedStart...]), context: context)
        }
        unparsedStart += used
        if unparsedStart >= pending.count || closeAfterOutput {
            unparsedStart = 0
        } else {
            unparsed = pending
        }
    }

    /// Keeps the bytes of `input` from `used` on for later parsing. Loop thread only.
    func keepUnparsed(_ input: UnsafeRawBufferPointer, from used: Int) {
        guard used < input.count, !closeAfterOutput else { return }
        unparsed = Array(UnsafeRawBufferPointer(rebasing: input[used...]))
        unparsedStart = 0
    }

    /// Serializes `response` to `request` into the output. Owner only.
    func queueResponse(_ response: HTTPResponse, to request: HTTPRequest, context: ServerContext) {
        releaseBodyBudget(context: context)
        let keepAlive =
            !closeAfterOutput && request.wantsKeepAlive && !context.isDraining.load(ordering: .relaxed)
            && !response.headers.containsToken("close", in: "Connection")
        let directive: HTTPResponseSerializer.ConnectionDirective =
            keepAlive ? (request.version == .http1_0 ? .keepAlive : .persistentDefault) : .close
        if !keepAlive { closeAfterOutput = true }
        for chunk in HTTPResponseSerializer.serialize(
            response, isResponseToHead: request.method == .HEAD, connection: directive,
            dateLine: context.dateCache.currentLine())
        {
            output.append(chunk)
        }
    }

    /// Queues the application's rendering of a framing error, with `Connection: close`, and
    /// drops any further input. Owner only.
    func queueError(_ error: HTTPRequestError, context: ServerContext) {
        let response = context.responder.response(for: error)
        releaseBodyBudget(context: context)
        closeAfterOutput = true
        readyRequest = nil
        unparsed = []
        unparsedStart = 0
        for chunk in HTTPResponseSerializer.serialize(
            response, isResponseToHead: false, connection: .close, dateLine: context.dateCache.currentLine())
        {
            output.append(chunk)
        }
    }
}
