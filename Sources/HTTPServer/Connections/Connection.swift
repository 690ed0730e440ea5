import Glibc

/// One client connection: its socket, parser, pending output and the bookkeeping of its event
/// loop.
///
/// Ownership protocol (why `@unchecked Sendable` is safe): a connection is owned by exactly one
/// thread at a time. Its event loop's thread owns it from adoption on; when a request goes to the
/// worker pool the loop sets `withWorker`, stops touching the "owner" fields below and hands the
/// connection over through the pool's mutex-protected queue; the worker runs the handler, queues
/// the response, may try a non-blocking write (or, for a head whose body awaits a decision, sets
/// `workerDecision`), and hands the connection back through the loop's mutex-protected inbox. Those two mutexes order every hand-over (happens-before). The fields
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

    /// A head whose body waits for the application's decision on a worker thread.
    struct AwaitingHead {
        let head: HTTPRequest
        /// The client waits for `100 Continue` (sent on admission if no body byte came first).
        let expectsContinue: Bool
    }

    let fd: Int32
    let info: ConnectionInfo

    // Owner fields.
    var parser: HTTPRequestParser
    var output = OutputQueue()
    /// Close once `output` is written (error response, `Connection: close`, HTTP/1.0, draining).
    var closeAfterOutput = false

    /// Bytes of the server's body budget this connection holds: the capacity its current request's
    /// body buffer was grown to (`HTTPRequestParser.bodyCapacity(toTake:)`), until the response is
    /// queued or the connection closes; charged to `bodyHolder`.
    var heldBodyBytes = 0
    var bodyHolder: BodyBudget.Holder?
    /// The application's decision about `headAwaitingDecision`, made on a worker; the loop
    /// applies it when the connection comes back.
    var workerDecision: HTTPBodyAdmission?
    /// Pipelined input and queued output bytes last added to the server's total
    /// (`ServerCounters.bufferedConnectionBytes`).
    var countedBufferedBytes = 0

    // Loop fields.
    /// The body being received was admitted (or refused): its bytes are charged as they arrive.
    var bodyAdmitted = false
    /// When the body being received was admitted, and the bytes of it received since: its
    /// minimum rate is measured from these.
    var bodyAdmittedAt: Int64 = 0
    var bodyBytesReceived = 0
    /// A head waiting for a worker to decide about its body; input after it waits in `unparsed`.
    var headAwaitingDecision: AwaitingHead?
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
    /// Since when the connection has waited for a request's first byte (deadline kind `.idle`):
    /// the longest-idle connections are closed first when the server is full.
    var idleSince: Int64 = 0
    var requestsParsed = 0
    /// When the connection was accepted.
    var acceptedAt: Int64 = 0
    /// When the first byte of the request head being received arrived.
    var headStartedAt: Int64 = 0
    /// How long the connection's request heads took, first byte to last, all together: once it
    /// reaches `headerReadTimeout`, the next response closes the connection (a client trickling
    /// each next request cannot hold a connection forever).
    var headerTimeSpent: Int64 = 0
    /// When unparsed input (the start of a pipelined request) arrived.
    var unparsedArrivedAt: Int64 = 0
    /// Since when a response has waited for the socket to take it, and `output.written` then:
    /// how fast the client reads (the slowest readers make room first, `EvictionRound`).
    var waitingToWriteSince: Int64 = 0
    var writtenBeforeWaiting = 0
    /// Chosen to make room (`EvictionRound`): closed after its response. Loop only (also while a
    /// worker has the connection: the worker never touches it).
    var evicted = false

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
        self.parser = HTTPRequestParser(limits: limits, pausesAfterHead: true)
    }

    var hasUnparsedInput: Bool { unparsedStart < unparsed.count }

    /// Feeds `input` (arrived at `arrivedAt`, `now` unless it waited in `unparsed`) to the parser
    /// until a request is complete, a head waits for a decision on a worker, an error occurs or
    /// the input is used up. Returns how many bytes were used. Loop thread only.
    func consume(_ input: UnsafeRawBufferPointer, now: Int64, arrivedAt: Int64? = nil, context: ServerContext) -> Int {
        var offset = 0
        while offset < input.count && readyRequest == nil && headAwaitingDecision == nil && !closeAfterOutput {
            let receivingBody = bodyAdmitted
            // A head parsed from input that waited in `unparsed` started and ended when it arrived.
            let arrival = arrivedAt ?? now
            if !receivingBody && parser.phase == .idle { headStartedAt = arrival }
            if receivingBody && !makeRoomForBody(input.count - offset, context: context) { return input.count }
            switch parser.parse(UnsafeRawBufferPointer(rebasing: input[offset...])) {
            case .needMore:
                if receivingBody { bodyBytesReceived += input.count - offset }
                offset = input.count
            case .continueNeeded(let used):
                // Not reported by a parser that pauses after heads (`.head` says it instead).
                offset += used
            case .head(let head, let expectsContinue, let used):
                headerTimeSpent += arrival - headStartedAt
                offset += used
                judgeBody(of: head, expectsContinue: expectsContinue, bytesInHand: input.count - offset, now: now, context: context)
            case .request(let request, let used):
                if !receivingBody { headerTimeSpent += arrival - headStartedAt }
                offset += used
                // What the body holds stays charged until its response is queued.
                bodyAdmitted = false
                bodyBytesReceived = 0
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

    /// Decides about the body `head` announces before any of it is charged or parsed. A body that
    /// arrived whole with its head is charged to the client's address without asking (it can no
    /// longer trickle); any other is the application's decision (`HTTPResponder.admitBody`),
    /// asked here without blocking and, when it needs to block, on a worker
    /// (`headAwaitingDecision`). Loop thread only.
    private func judgeBody(
        of head: HTTPRequest, expectsContinue: Bool, bytesInHand: Int, now: Int64, context: ServerContext
    ) {
        if let length = parser.bodyContentLength, length <= bytesInHand {
            startBody(for: .address(info.clientAddress), now: now, context: context)
            return
        }
        let decision = context.responder.admitBody(of: head, connection: info, mayBlock: false)
        if case .decideOnWorker = decision {
            headAwaitingDecision = AwaitingHead(head: head, expectsContinue: expectsContinue)
            return
        }
        apply(decision, to: head, expectsContinue: expectsContinue && bytesInHand == 0, now: now, context: context)
    }

    /// Asks the application about the body of `head` (`headAwaitingDecision`) where it may block
    /// (a worker), for the loop to apply when the connection comes back. Owner only.
    func decideAboutBody(of head: HTTPRequest, context: ServerContext) {
        workerDecision = context.responder.admitBody(of: head, connection: info, mayBlock: true)
    }

    /// Applies the decision a worker made about `headAwaitingDecision`. Loop thread only.
    func applyWorkerDecision(now: Int64, context: ServerContext) {
        guard let decision = workerDecision, let awaiting = headAwaitingDecision else { return }
        workerDecision = nil
        headAwaitingDecision = nil
        apply(
            decision, to: awaiting.head, expectsContinue: awaiting.expectsContinue && !hasUnparsedInput, now: now,
            context: context)
    }

    /// Admits (then `100 Continue` when the client waits for it) or refuses the body of `head`.
    private func apply(
        _ decision: HTTPBodyAdmission, to head: HTTPRequest, expectsContinue: Bool, now: Int64, context: ServerContext
    ) {
        switch decision {
        case .admit(let owner):
            let holder = owner.map(BodyBudget.Holder.owner) ?? .address(info.clientAddress)
            // Refused before any of it is read (never `100 Continue`) when it could not start.
            let start = context.bodyBudget.outcomeOfStarting(for: holder)
            guard start == .charged else {
                refuseBody(start, context: context)
                return
            }
            startBody(for: holder, now: now, context: context)
            // RFC 9110 10.1.1: a server may omit 100 Continue once body bytes have arrived.
            if expectsContinue { output.append(HTTPResponseSerializer.continueResponse) }
        case .refuse(let response):
            queueClosingResponse(response, isResponseToHead: head.method == .HEAD, context: context)
        case .decideOnWorker:
            context.logger.error("the application asked a worker to decide about a body on a worker; refusing it")
            queueError(HTTPRequestError(status: .internalServerError, reason: "no decision about a body"), context: context)
        }
    }

    /// Starts receiving an admitted body charged to `holder`, and its clock.
    private func startBody(for holder: BodyBudget.Holder, now: Int64, context: ServerContext) {
        releaseBodyBudget(context: context)
        bodyAdmitted = true
        bodyAdmittedAt = now
        bodyBytesReceived = 0
        bodyHolder = holder
    }

    /// Grows the body's buffer to take `bytes` more of input once its holder is charged the
    /// growth (the buffer's capacity is what the body holds, and grows with what arrives); when
    /// the budget cannot take it, queues the 429 (the holder's share) or the 503 (the budget) and
    /// returns false.
    private func makeRoomForBody(_ bytes: Int, context: ServerContext) -> Bool {
        guard let holder = bodyHolder, let capacity = parser.bodyCapacity(toTake: bytes) else { return true }
        let growth = capacity - heldBodyBytes
        let outcome = context.bodyBudget.charge(growth, to: holder, arriving: bodyBytesReceived > 0)
        guard outcome == .charged else {
            refuseBody(outcome, context: context)
            return false
        }
        heldBodyBytes += growth
        parser.reserveBodyCapacity(capacity)
        return true
    }

    /// Queues the 429 (the holder's share) or the 503 (the budget) of a body the budget cannot
    /// take.
    private func refuseBody(_ outcome: BodyBudget.Outcome, context: ServerContext) {
        switch outcome {
        case .charged:
            return
        case .overShare:
            context.logger.debug(
                "refused a request body over the client's share of the body budget",
                metadata: [
                    "connection": "\(info.id)", "share": "\(context.configuration.maxBufferedBodyBytesPerClient)",
                ])
            queueError(context.overShare(), context: context)
        case .overBudget:
            context.logger.debug(
                "refused a request body over the body budget",
                metadata: ["connection": "\(info.id)", "budget": "\(context.configuration.maxBufferedBodyBytes)"])
            queueError(context.overloaded("request body budget exhausted"), context: context)
        }
    }

    /// When the body being received is cut off for inactivity: `bodyReadTimeout` after its last
    /// bytes. Loop thread only.
    func bodyDeadline(now: Int64, context: ServerContext) -> Int64 {
        now + context.bodyReadTimeout
    }

    /// Whether the body being received falls under the minimum rate: its average since its
    /// admission, once the grace period is over. Only checked while the budget is under pressure
    /// (`BodyBudget.isUnderPressure`). Loop thread only.
    func bodyIsSlowerThanMinimumRate(now: Int64, context: ServerContext) -> Bool {
        let rate = Int64(context.configuration.minBodyBytesPerSecond)
        guard rate > 0, bodyAdmitted else { return false }
        let elapsed = now - bodyAdmittedAt
        guard elapsed >= context.bodyRateGracePeriod else { return false }
        return arrivingBody.rate(at: now) < Double(rate)
    }

    /// The pace of the body being received.
    var arrivingBody: BodyBudget.ArrivingBody {
        BodyBudget.ArrivingBody(bytes: bodyBytesReceived, since: bodyAdmittedAt)
    }

    /// A body is being received: admitted, not complete, not refused.
    var isReceivingBody: Bool {
        bodyAdmitted && readyRequest == nil && headAwaitingDecision == nil && !closeAfterOutput && !withWorker
    }

    /// Frees what the body being received holds when the budget is over-committed and its holder
    /// holds more than its part (`BodyBudget.shed`): true when it did, and the caller cuts the
    /// body. Loop thread only.
    func shedBody(context: ServerContext) -> Bool {
        guard let bodyHolder, context.bodyBudget.shed(heldBodyBytes, of: bodyHolder) else { return false }
        heldBodyBytes = 0
        return true
    }

    /// Returns the connection's share of the body budget (response queued, error, close), and
    /// frees what a body cut off holds (a complete body is its request's by now) as it is given
    /// back. Owner only; idempotent.
    func releaseBodyBudget(context: ServerContext) {
        if let bodyHolder { context.bodyBudget.release(heldBodyBytes, for: bodyHolder) }
        heldBodyBytes = 0
        parser.discardBody()
    }

    /// Bytes of pipelined input and queued output the connection holds now.
    private var bufferedBytes: Int { (hasUnparsedInput ? unparsed.count : 0) + output.count }

    /// Brings the server's total of connection buffers up to date with this connection's.
    /// Owner only.
    func settleBufferedBytes(context: ServerContext) {
        let holding = bufferedBytes
        let change = holding - countedBufferedBytes
        guard change != 0 else { return }
        context.counters.bufferedConnectionBytes.add(change, ordering: .relaxed)
        countedBufferedBytes = holding
    }

    /// Closes the socket and gives back everything the connection holds: what its body holds,
    /// its buffers' count, its place in the connection limits. Owner only, once.
    func closeSocket(context: ServerContext) {
        releaseBodyBudget(context: context)
        context.counters.bufferedConnectionBytes.subtract(countedBufferedBytes, ordering: .relaxed)
        countedBufferedBytes = 0
        // Closing the descriptor also removes it from the epoll set.
        Glibc.close(fd)
        context.connectionClosed(clientAddress: info.clientAddress)
    }

    /// Feeds the buffered pipelined input (a request it starts started when it arrived). Loop
    /// thread only.
    func consumeUnparsedInput(now: Int64, context: ServerContext) {
        let pending = unparsed
        unparsed = []
        let used = pending.withUnsafeBytes { bytes in
            consume(
                UnsafeRawBufferPointer(rebasing: bytes[unparsedStart...]), now: now, arrivedAt: unparsedArrivedAt,
                context: context)
        }
        unparsedStart += used
        if unparsedStart >= pending.count || closeAfterOutput {
            unparsedStart = 0
        } else {
            unparsed = pending
        }
    }

    /// Keeps the bytes of `input` (arrived at `now`) from `used` on for later parsing. Loop
    /// thread only.
    func keepUnparsed(_ input: UnsafeRawBufferPointer, from used: Int, now: Int64) {
        guard used < input.count, !closeAfterOutput else { return }
        unparsed = Array(UnsafeRawBufferPointer(rebasing: input[used...]))
        unparsedStart = 0
        unparsedArrivedAt = now
    }

    /// A response starts waiting for the socket to take it. Loop thread only.
    func startedWaitingToWrite(now: Int64) {
        waitingToWriteSince = now
        writtenBeforeWaiting = output.written
    }

    /// How fast the client has read since its response started waiting for the socket, in bytes
    /// per second (over at least a second: a wait just begun is not yet slow).
    func readingRate(now: Int64) -> Double {
        let seconds = max(1, Double(now - waitingToWriteSince) / 1e9)
        return Double(output.written - writtenBeforeWaiting) / seconds
    }

    /// Serializes `response` to `request` into the output. Owner only.
    func queueResponse(_ response: HTTPResponse, to request: HTTPRequest, context: ServerContext) {
        releaseBodyBudget(context: context)
        let keepAlive =
            !closeAfterOutput && request.wantsKeepAlive && !context.isDraining.load(ordering: .relaxed)
            && headerTimeSpent < context.headerReadTimeout
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
        queueClosingResponse(context.responder.response(for: error), isResponseToHead: false, context: context)
    }

    /// Queues `response` with `Connection: close` and drops any further input. Owner only.
    private func queueClosingResponse(_ response: HTTPResponse, isResponseToHead: Bool, context: ServerContext) {
        releaseBodyBudget(context: context)
        closeAfterOutput = true
        readyRequest = nil
        headAwaitingDecision = nil
        unparsed = []
        unparsedStart = 0
        for chunk in HTTPResponseSerializer.serialize(
            response, isResponseToHead: isResponseToHead, connection: .close, dateLine: context.dateCache.currentLine())
        {
            output.append(chunk)
        }
    }
}
