import FoundationEssentials
import Glibc
import Logging
import Synchronization

/// One I/O thread: an edge-triggered epoll loop over its share of the connections. It reads,
/// parses, runs `.inline` handlers, sends requests to the worker pool, writes responses, and
/// enforces the timeouts (checked every `timerResolution`).
///
/// Thread confinement (why `@unchecked Sendable` is safe): everything but `inbox` is touched only
/// by the loop's own thread. Other threads talk to the loop only through `inbox` (a lock) and
/// the eventfd that wakes it: the acceptor adopts connections, workers hand connections back,
/// `shutdown` asks it to drain.
// safe because all state but the lock-protected inbox is confined to the loop thread (see above).
final class EventLoop: @unchecked Sendable {
    private enum Message {
        case adopt(AcceptedSocket)
        case handBack(Connection)
        case drain(deadline: Int64)
        /// Offer this loop's best candidate for `EvictionRound`.
        case offerEviction(EvictionRound)
        /// Close this loop's best candidate for `EvictionRound`.
        case evict(EvictionRound)
        /// A held request's waiter was woken (EventLoop+Waits.swift).
        case wake(connectionID: UInt64, waiter: HTTPWaiter)
        /// Answer every held request now (EventLoop+Waits.swift).
        case answerWaits
    }

    private struct Inbox {
        var messages: [Message] = []
        /// Set when the loop has stopped: nothing more is accepted.
        var closed = false
    }

    private let index: Int
    let context: ServerContext
    let pool: WorkerPool
    private let epoll: Epoll
    private let wakeFD: Int32
    private let inbox = HandoffLock(Inbox())

    // Loop-thread state.
    var connections: [UInt64: Connection] = [:]
    private let readBuffer: UnsafeMutableRawBufferPointer
    private let eventBuffer: UnsafeMutableRawBufferPointer
    private(set) var now: Int64 = 0
    private var nextSweep: Int64 = 0
    private(set) var draining = false
    private var drainDeadline: Int64 = .max
    /// Connections that used their read budget and continue after the current batch of events.
    private var deferred: [Connection] = []
    /// A read took the body budget beyond its size: bodies are shed after the current batch.
    private var shedPending = false

    /// Reads per connection before other connections get a turn.
    private static let readBudget = 8
    /// Pipelined requests parsed from buffered input per connection before other connections
    /// get a turn.
    private static let pipelineBudget = 16
    /// How long a connection has been open before it ranks like the others to be closed to make
    /// room (`EvictionRound`): a client just accepted has its chance to send.
    static let minimumAgeBeforeEviction: Int64 = 100_000_000
    /// The largest read while connections hold more than `maxBufferedConnectionBytes`.
    private static let readSizeOverBudget = 4096
    /// Pipelined responses are gathered until this many bytes wait, then written.
    private static let outputHighWater = 64 * 1024
    private static let wakeToken: UInt64 = 0
    private static let connectionEvents: Epoll.Events = [.readable, .writable, .readHangUp, .edgeTriggered]

    init(index: Int, context: ServerContext, pool: WorkerPool) throws(HTTPServerError) {
        self.index = index
        self.context = context
        self.pool = pool
        let epoll = try Epoll()
        let wakeFD = try Epoll.makeEventFD()
        do {
            try epoll.add(wakeFD, events: [.readable], token: Self.wakeToken)
        } catch {
            Glibc.close(wakeFD)
            throw error
        }
        self.epoll = epoll
        self.wakeFD = wakeFD
        readBuffer = .allocate(byteCount: max(1024, context.configuration.maxBufferedInputBytes), alignment: 16)
        eventBuffer = .allocate(byteCount: 256 * Epoll.eventSize, alignment: 16)
    }

    deinit {
        readBuffer.deallocate()
        eventBuffer.deallocate()
        Glibc.close(wakeFD)
    }

    // MARK: - Messages from other threads

    /// Takes ownership of an accepted socket. False when the loop has stopped (the caller closes).
    func adopt(_ socket: AcceptedSocket) -> Bool {
        post(.adopt(socket))
    }

    /// Asks the loop for its best candidate to make room (the server is full and a client was
    /// accepted). False when the loop has stopped.
    func offerEviction(_ round: EvictionRound) -> Bool {
        post(.offerEviction(round))
    }

    /// Asks the loop to close its best candidate of `round` now.
    func evict(_ round: EvictionRound) {
        _ = post(.evict(round))
    }

    /// Returns a connection from a worker. False when the loop has stopped (the caller closes).
    func handBack(_ connection: Connection) -> Bool {
        post(.handBack(connection))
    }

    /// Starts the graceful drain: idle connections close now, the others after their response;
    /// whatever remains at `deadline` is closed by force, then the loop ends.
    func beginDrain(deadline: Int64) {
        _ = post(.drain(deadline: deadline))
    }

    /// Asks the loop to run the recheck of the request `waiter` holds on `connectionID`.
    func wake(connectionID: UInt64, waiter: HTTPWaiter) {
        _ = post(.wake(connectionID: connectionID, waiter: waiter))
    }

    /// Asks the loop to answer every request it holds now, each with `Connection: close`.
    func answerWaits() {
        _ = post(.answerWaits)
    }

    private func post(_ message: Message) -> Bool {
        let (accepted, wake) = inbox.withLock { inbox -> (Bool, Bool) in
            guard !inbox.closed else { return (false, false) }
            inbox.messages.append(message)
            return (true, inbox.messages.count == 1)
        }
        if wake { SocketIO.signal(eventFD: wakeFD) }
        return accepted
    }

    // MARK: - The loop

    /// The thread body; returns when the drain is over (or epoll fails).
    func run() {
        now = context.now()
        nextSweep = now + context.timerResolution
        let timeoutMilliseconds = Int32(clamping: max(1, context.timerResolution / 1_000_000))
        while true {
            let count: Int
            do {
                count = try epoll.wait(into: eventBuffer, timeoutMilliseconds: deferred.isEmpty ? timeoutMilliseconds : 0)
            } catch {
                context.logger.warning("event loop stopped: \(error)", metadata: ["loop": "\(index)"])
                break
            }
            now = context.now()
            for eventIndex in 0..<count {
                let (events, token) = Epoll.event(at: eventIndex, in: eventBuffer)
                if token == Self.wakeToken {
                    SocketIO.drain(eventFD: wakeFD)
                    processInbox()
                    continue
                }
                guard let connection = connections[token] else { continue }
                if !events.isDisjoint(with: [.readable, .readHangUp, .hangUp, .error]) {
                    connection.mightBeReadable = true
                }
                if !events.isDisjoint(with: [.readHangUp, .hangUp, .error]) {
                    // The end of the stream (or an error) is pending behind any data: read until
                    // recv reports it, whatever the size of the reads.
                    connection.peerHungUp = true
                }
                if !connection.withWorker {
                    drive(connection)
                }
            }
            if !deferred.isEmpty {
                let pending = deferred
                deferred = []
                for connection in pending where connections[connection.info.id] === connection && !connection.withWorker {
                    drive(connection)
                }
            }
            if shedPending {
                shedPending = false
                shedBodies()
            }
            if now >= nextSweep {
                sweep()
                nextSweep = now + context.timerResolution
            }
            if draining {
                if connections.isEmpty { break }
                if now >= drainDeadline {
                    forceCloseAll()
                    break
                }
            }
        }
        stop()
    }

    private func processInbox() {
        let messages = inbox.withLock { inbox -> [Message] in
            let messages = inbox.messages
            inbox.messages = []
            return messages
        }
        for message in messages {
            switch message {
            case .adopt(let socket):
                register(socket)
            case .handBack(let connection):
                connection.withWorker = false
                if connections[connection.info.id] === connection {
                    receiveFromWorker(connection)
                    drive(connection)
                } else {
                    connection.arrivingWait?.wait.waiter.end()
                    connection.closeSocket(context: context)
                }
            case .drain(let deadline):
                draining = true
                drainDeadline = deadline
                for connection in Array(connections.values) where isIdle(connection) {
                    close(connection)
                }
                answerHeldRequests()
            case .offerEviction(let round):
                round.offer(bestCandidate(of: round)?.rank, fromLoop: index)
            case .evict(let round):
                if let candidate = bestCandidate(of: round) { evict(candidate.connection, as: candidate.rank.kind) }
            case .wake(let connectionID, let waiter):
                recheck(connectionID: connectionID, waiter: waiter)
            case .answerWaits:
                answerHeldRequests()
            }
        }
    }

    private func register(_ socket: AcceptedSocket) {
        let id = context.counters.nextConnectionID.add(1, ordering: .relaxed).oldValue
        let connection = Connection(
            fd: socket.fd,
            info: ConnectionInfo(id: id, remoteAddress: socket.remoteAddress, clientAddress: socket.clientAddress),
            limits: context.limits)
        do {
            try epoll.add(socket.fd, events: Self.connectionEvents, token: id)
        } catch {
            context.logger.warning("cannot watch a new connection: \(error)")
            socket.close(context: context)
            return
        }
        connections[id] = connection
        // A new connection may stay silent for the header timeout, then it is closed quietly.
        connection.deadlineKind = .idle
        connection.deadline = now + context.headerReadTimeout
        connection.idleSince = now
        connection.acceptedAt = now
        if draining { close(connection) }
    }

    /// This loop's connection of `round`'s addresses that should go first to make room, and its
    /// rank (`EvictionRound.Rank`).
    private func bestCandidate(of round: EvictionRound) -> (connection: Connection, rank: EvictionRound.Rank)? {
        var best: (connection: Connection, rank: EvictionRound.Rank)?
        for connection in connections.values where round.addresses.contains(connection.info.clientAddress) {
            guard let rank = evictionRank(of: connection) else { continue }
            if best.map({ rank < $0.rank }) ?? true { best = (connection, rank) }
        }
        return best
    }

    /// How `connection` ranks to be closed to make room; nil when it is already going.
    private func evictionRank(of connection: Connection) -> EvictionRound.Rank? {
        if connection.evicted || connection.lingering { return nil }
        if connection.withWorker { return .init(kind: .answering, order: Double(connection.info.id)) }
        if now - connection.acceptedAt < Self.minimumAgeBeforeEviction {
            return .init(kind: .new, order: Double(connection.acceptedAt))
        }
        if connection.heldRequest != nil { return .init(kind: .holdingWait, order: Double(connection.info.id)) }
        if connection.deadlineKind == .write {
            return .init(kind: .readingSlowly, order: connection.readingRate(now: now))
        }
        if isWaitingForRequest(connection) { return .init(kind: .idle, order: Double(connection.idleSince)) }
        if connection.deadlineKind == .head { return .init(kind: .receivingHead, order: Double(connection.headStartedAt)) }
        if connection.isReceivingBody { return .init(kind: .receivingBody, order: connection.arrivingBody.rate(at: now)) }
        return .init(kind: .answering, order: Double(connection.info.id))
    }

    /// Closes `connection` to make room (answering first what it can: a held long-poll gets its
    /// timeout answer, a request being answered its response, a body being received a 503).
    private func evict(_ connection: Connection, as kind: EvictionRound.Rank.Kind) {
        // Counted first: whoever sees the close sees the count.
        context.counters.evictedConnections.add(1, ordering: .relaxed)
        connection.evicted = true
        switch kind {
        case .holdingWait:
            answerHeld(connection, closing: true)
            drive(connection)
        case .receivingBody:
            cut(connection, context.overloaded("connection closed to make room: the server is full"))
        case .answering:
            // Closed once its request is answered (`advance`).
            if !connection.withWorker { drive(connection) }
        case .idle, .receivingHead, .readingSlowly, .new:
            closeEvicted(connection)
        }
    }

    /// Closes an evicted connection: at once, or after discarding what the client sent meanwhile
    /// (a request that arrived just now), so that the close does not reset the connection.
    private func closeEvicted(_ connection: Connection) {
        if SocketIO.hasPendingInput(connection.fd) {
            startLingeringClose(connection)
        } else {
            close(connection)
        }
    }

    /// Idle, between requests or before the first one: what may be closed to make room.
    private func isWaitingForRequest(_ connection: Connection) -> Bool {
        connection.deadlineKind == .idle && isIdle(connection)
    }

    /// Stops: refuses further messages, closes what the inbox still holds.
    private func stop() {
        let leftovers = inbox.withLock { inbox -> [Message] in
            inbox.closed = true
            let messages = inbox.messages
            inbox.messages = []
            return messages
        }
        for message in leftovers {
            switch message {
            case .adopt(let socket):
                socket.close(context: context)
            case .handBack(let connection):
                connection.arrivingWait?.wait.waiter.end()
                connection.closeSocket(context: context)
            case .offerEviction(let round):
                round.offer(nil, fromLoop: index)
            case .drain, .evict, .wake, .answerWaits:
                break
            }
        }
        for connection in Array(connections.values) where !connection.withWorker {
            close(connection)
        }
    }

    // MARK: - Driving a connection

    /// Moves a connection forward as far as it can go without blocking (`advance`), then
    /// brings the server's count of connection buffers up to date with it.
    func drive(_ connection: Connection) {
        advance(connection)
        if connections[connection.info.id] === connection && !connection.withWorker {
            connection.settleBufferedBytes(context: context)
        }
    }

    /// Answers a parsed request (inline) or hands it to a worker (or holds it for its wait), has
    /// a worker decide about a body, parses buffered input, writes output, reads.
    private func advance(_ connection: Connection) {
        var reads = 0
        var pipelined = 0
        while true {
            if connection.withWorker { return }
            if connection.heldRequest != nil {
                watchHeld(connection)
                return
            }
            if connection.lingering {
                lingerRead(connection)
                return
            }
            // 0. The application's decision about a body, made on a worker; or a head whose body
            //    waits for a worker to decide.
            if connection.workerDecision != nil {
                connection.applyWorkerDecision(now: now, context: context)
                continue
            }
            if let awaiting = connection.headAwaitingDecision {
                guard hand(connection, to: .decideAboutBody, of: awaiting.head) else { return }
                continue
            }
            // 1. A parsed request waits for its handler; one request at a time, in order.
            if let ready = connection.readyRequest {
                if ready.mode == .inline {
                    connection.readyRequest = nil
                    let response = context.responder.respond(to: ready.request, connection: connection.info)
                    connection.queueResponse(response, to: ready.request, context: context)
                    continue
                }
                guard hand(connection, to: .respond, of: ready.request) else { return }
                continue
            }
            // 2. Buffered pipelined input, parsed only once earlier responses are queued, and
            //    only while little output waits (backpressure; none while connections hold more
            //    than their budget).
            let outputLimit = context.connectionBuffersOverBudget ? 1 : Self.outputHighWater
            if !connection.closeAfterOutput && connection.hasUnparsedInput && connection.output.count < outputLimit {
                if pipelined == Self.pipelineBudget {
                    deferred.append(connection)
                    return
                }
                pipelined += 1
                connection.consumeUnparsedInput(now: now, context: context)
                continue
            }
            // 3. Output.
            if !connection.output.isEmpty {
                guard flush(connection) else { return }
                continue
            }
            // 4. Nothing to write.
            if connection.closeAfterOutput {
                startLingeringClose(connection)
                return
            }
            if draining && isIdle(connection) {
                close(connection)
                return
            }
            if connection.evicted && isIdle(connection) {
                closeEvicted(connection)
                return
            }
            // 5. Read more.
            if connection.mightBeReadable {
                if reads == Self.readBudget {
                    deferred.append(connection)
                    return
                }
                reads += 1
                // Connections over their buffer budget read little at a time: what a read leaves
                // unparsed (pipelined input) stays small.
                let readSize = context.connectionBuffersOverBudget ? Self.readSizeOverBudget : readBuffer.count
                let received = recv(connection.fd, readBuffer.baseAddress, readSize, 0)
                if received > 0 {
                    // Edge-triggered: a short read drained the socket; new bytes raise a new event.
                    if received < readSize && !connection.peerHungUp { connection.mightBeReadable = false }
                    let input = UnsafeRawBufferPointer(rebasing: readBuffer[0..<received])
                    let used = connection.consume(input, now: now, context: context)
                    connection.keepUnparsed(input, from: used, now: now)
                    if context.bodyBudget.isOverCommitted { shedPending = true }
                    if connection.parser.phase == .body && connection.readyRequest == nil
                        && connection.headAwaitingDecision == nil
                    {
                        // Body inactivity is measured from the last bytes received.
                        connection.deadlineKind = .body
                        connection.deadline = connection.bodyDeadline(now: now, context: context)
                    }
                    continue
                }
                if received == 0 {
                    // The peer closed: whatever was half received cannot be answered.
                    close(connection)
                    return
                }
                let code = errno
                if code == EINTR { continue }
                if code == EAGAIN || code == EWOULDBLOCK {
                    connection.mightBeReadable = false
                    continue
                }
                context.logger.debug(
                    "connection read failed", metadata: ["connection": "\(connection.info.id)", "errno": "\(code)"])
                close(connection)
                return
            }
            armReadDeadline(connection)
            return
        }
    }

    /// Hands `connection` to a worker to answer its ready request or to decide about the body of
    /// its awaiting head (earlier inline responses go out first). True when the loop goes on
    /// driving it (the worker queue was full: its 503 is queued); false when it must stop: a
    /// worker has it, its output is blocked, or it was closed.
    private func hand(_ connection: Connection, to purpose: WorkerPool.Job.Purpose, of request: HTTPRequest) -> Bool {
        if !connection.output.isEmpty {
            guard flush(connection) else { return false }
        }
        if purpose == .respond { connection.readyRequest = nil }
        connection.withWorker = true
        connection.deadlineKind = .none
        connection.deadline = .max
        switch pool.submit(WorkerPool.Job(connection: connection, request: request, loop: self, purpose: purpose)) {
        case .accepted:
            return false
        case .full:
            // Overloaded: 503 with Retry-After now rather than an ever longer wait.
            connection.withWorker = false
            context.logger.debug("refused a request: worker queue full", metadata: ["connection": "\(connection.info.id)"])
            connection.queueError(context.overloaded("worker queue full"), context: context)
            return true
        case .stopped:
            connection.withWorker = false
            close(connection)
            return false
        }
    }

    /// Writes pending output. True when all of it went out; false when the socket is full (an
    /// edge-triggered EPOLLOUT resumes) or the connection was closed on a write error.
    private func flush(_ connection: Connection) -> Bool {
        switch connection.output.write(to: connection.fd) {
        case .drained:
            if connection.deadlineKind == .write {
                connection.deadlineKind = .none
                connection.deadline = .max
            }
            return true
        case .blocked(let progressed):
            if connection.deadlineKind != .write { connection.startedWaitingToWrite(now: now) }
            if progressed || connection.deadlineKind != .write {
                connection.deadlineKind = .write
                connection.deadline = now + context.writeTimeout
            }
            return false
        case .failed(let code):
            context.logger.debug(
                "connection write failed", metadata: ["connection": "\(connection.info.id)", "errno": "\(code)"])
            close(connection)
            return false
        }
    }

    /// Sets the deadline for the phase the connection waits in.
    private func armReadDeadline(_ connection: Connection) {
        switch connection.parser.phase {
        case .idle:
            if connection.deadlineKind != .idle {
                connection.deadlineKind = .idle
                connection.deadline = now + context.keepAliveIdleTimeout
                connection.idleSince = now
            }
        case .head:
            // Measured from the first byte of the request (empty lines before it included), when
            // it arrived (a pipelined byte waits for earlier responses). A new connection's first
            // request is measured from the connect, so a connection sends a complete request head
            // within `headerReadTimeout` of connecting, however it spreads its bytes.
            if connection.deadlineKind != .head {
                let start = connection.requestsParsed == 0 ? connection.acceptedAt : connection.headStartedAt
                connection.deadline = start + context.headerReadTimeout
                connection.deadlineKind = .head
            }
        case .body:
            if connection.deadlineKind != .body {
                connection.deadlineKind = .body
                connection.deadline = connection.bodyDeadline(now: now, context: context)
            }
        }
    }

    private func isIdle(_ connection: Connection) -> Bool {
        !connection.withWorker && connection.readyRequest == nil && connection.headAwaitingDecision == nil
            && connection.output.isEmpty
            && !connection.hasUnparsedInput && connection.parser.phase == .idle && !connection.lingering
            && connection.heldRequest == nil
    }

    // MARK: - Closing

    /// After the last response: stop sending (FIN) but keep reading and discarding what the client
    /// still sends, so closing with unread input does not reset the connection and destroy the
    /// response before the client read it.
    private func startLingeringClose(_ connection: Connection) {
        guard context.lingeringCloseTimeout > 0 else {
            close(connection)
            return
        }
        Glibc.shutdown(connection.fd, Int32(SHUT_WR))
        connection.lingering = true
        connection.deadlineKind = .linger
        connection.deadline = now + context.lingeringCloseTimeout
        connection.mightBeReadable = true
        lingerRead(connection)
    }

    private func lingerRead(_ connection: Connection) {
        var reads = 0
        while connection.mightBeReadable {
            if reads == Self.readBudget {
                deferred.append(connection)
                return
            }
            reads += 1
            let received = recv(connection.fd, readBuffer.baseAddress, readBuffer.count, 0)
            if received > 0 {
                if received < readBuffer.count && !connection.peerHungUp { connection.mightBeReadable = false }
                continue
            }
            if received < 0 && errno == EINTR { continue }
            if received < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                connection.mightBeReadable = false
                return
            }
            close(connection)
            return
        }
    }

    func close(_ connection: Connection) {
        guard connections.removeValue(forKey: connection.info.id) != nil else { return }
        endHeldWait(connection)
        connection.closeSocket(context: context)
    }

    /// At the end of the grace period: close what the loop owns; connections held by a worker
    /// are shut down (the client sees the end now) and closed by that worker when it returns.
    private func forceCloseAll() {
        for connection in Array(connections.values) {
            if connection.withWorker {
                Glibc.shutdown(connection.fd, Int32(SHUT_RDWR))
                connections.removeValue(forKey: connection.info.id)
            } else {
                close(connection)
            }
        }
    }

    // MARK: - Timeouts

    private func sweep() {
        var expired: [Connection] = []
        for connection in connections.values where !connection.withWorker && connection.deadline <= now {
            expired.append(connection)
        }
        for connection in expired {
            switch connection.deadlineKind {
            case .none:
                break
            case .idle, .write, .linger:
                close(connection)
            case .wait:
                answerHeld(connection, closing: false)
                drive(connection)
            case .head, .body:
                let reason = connection.deadlineKind == .head ? "header section not received in time" : "body stalled"
                cut(connection, HTTPRequestError(status: .requestTimeout, reason: reason))
            }
        }
        shedBodies()
    }

    /// While the body budget is under pressure: the bodies under the minimum rate are cut (408),
    /// and while more than the budget is held, the slowest bodies of the holders holding more than
    /// their part are cut (503) until it is not, so that the budget goes to the clients holding
    /// least of it (`BodyBudget`). An honest slow body on a server not under pressure is never cut.
    private func shedBodies() {
        let budget = context.bodyBudget
        guard budget.isUnderPressure else {
            _ = budget.publishSlowest(nil, loop: index, now: now)
            return
        }
        let receiving = connections.values.filter(\.isReceivingBody)
        let sheddableHolders = budget.sheddableHolders()
        var sheddable = receiving.filter { $0.bodyHolder.map(sheddableHolders.contains) ?? false }
            .map { (connection: $0, rate: $0.arrivingBody.rate(at: now)) }
        let slowest = sheddable.indices.min { sheddable[$0].rate < sheddable[$1].rate }
        let slowestElsewhere = budget.publishSlowest(slowest.map { sheddable[$0].connection.arrivingBody }, loop: index, now: now)
        for connection in receiving where connection.bodyIsSlowerThanMinimumRate(now: now, context: context) {
            cut(connection, HTTPRequestError(status: .requestTimeout, reason: "body slower than the minimum rate"))
        }
        // Slowest first; a slower body on another loop goes before: that loop sheds it at its next
        // tick.
        while budget.isOverCommitted, let next = sheddable.indices.min(by: { sheddable[$0].rate < sheddable[$1].rate }) {
            let body = sheddable.remove(at: next)
            guard body.rate <= slowestElsewhere else { return }
            guard body.connection.isReceivingBody, body.connection.shedBody(context: context) else { continue }
            cut(body.connection, context.overloaded("request body shed: the body budget is full"))
        }
    }

    /// Answers a request being received with `error` and closes its connection after it (at once
    /// when a response is already on its way).
    private func cut(_ connection: Connection, _ error: HTTPRequestError) {
        guard connection.output.isEmpty, !connection.closeAfterOutput else {
            close(connection)
            return
        }
        context.logger.debug(
            "request cut off", metadata: ["connection": "\(connection.info.id)", "reason": "\(error.reason)"])
        connection.deadlineKind = .none
        connection.deadline = .max
        connection.queueError(error, context: context)
        drive(connection)
    }
}
