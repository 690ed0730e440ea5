/// A request the loop holds for its `HTTPWait` (long-poll): only what answering it needs.
struct HeldRequest: Sendable {
    let request: HTTPRequest
    let wait: HTTPWait

    /// Keeps of `request` only what its response needs (method, version and `Connection` fields,
    /// `Connection.queueResponse`): a held request may wait a minute, and its other fields (a
    /// bearer token, say) would cost memory for each of thousands of waiting clients.
    init(answering request: HTTPRequest, wait: HTTPWait) {
        self.request = HTTPRequest(
            method: request.method, target: "", path: "", version: request.version,
            headers: HTTPHeaders(request.headers.filter { $0.name.lowercased() == "connection" }))
        self.wait = wait
    }
}

/// Held requests: a worker's handler answered with a wait, so the loop keeps the request, with no
/// thread, until its waiter is woken (the recheck goes to a worker), its deadline passes, the
/// application asks for every wait to end, or the loop drains (the loop answers `expire()`).
/// A held connection is not read; only its client hanging up ends the wait early.
extension EventLoop {
    /// A connection back from a worker: holds the request its handler or recheck answered with a
    /// wait, or forgets the deadline of the wait that just got its answer.
    func receiveFromWorker(_ connection: Connection) {
        guard let held = connection.arrivingWait else {
            connection.waitDeadline = nil
            return
        }
        connection.arrivingWait = nil
        let deadline = connection.waitDeadline ?? Self.adding(held.wait.timeout.nanosecondsClamped, to: now)
        connection.waitDeadline = deadline
        connection.heldRequest = held
        connection.deadlineKind = .wait
        connection.deadline = deadline
        context.counters.waitingRequests.add(1, ordering: .relaxed)
        if draining {
            answerHeld(connection, closing: true)
            return
        }
        switch held.wait.waiter.hold(loop: self, connectionID: connection.info.id) {
        case .held:
            break
        case .wakePending:
            startRecheck(connection)
        case .ended:
            answerHeld(connection, closing: false)
        }
    }

    /// A held connection's events: its client hanging up (or a socket error) ends the wait.
    func watchHeld(_ connection: Connection) {
        if connection.peerHungUp { close(connection) }
    }

    /// A wake for the request `waiter` holds on `connectionID` (ignored when that wait is over).
    func recheck(connectionID: UInt64, waiter: HTTPWaiter) {
        guard let connection = connections[connectionID], let held = connection.heldRequest, held.wait.waiter === waiter
        else { return }
        startRecheck(connection)
        drive(connection)
    }

    /// Answers every held request now, each with `Connection: close`.
    func answerHeldRequests() {
        for connection in Array(connections.values) where connection.heldRequest != nil {
            answerHeld(connection, closing: true)
            drive(connection)
        }
    }

    /// Answers the held request with its `expire()` response (the caller drives the connection).
    func answerHeld(_ connection: Connection, closing: Bool) {
        guard let held = releaseHeld(connection) else { return }
        respond(to: held, on: connection, closing: closing)
    }

    /// Ends the wait of a connection being closed.
    func endHeldWait(_ connection: Connection) {
        releaseHeld(connection)?.wait.waiter.end()
    }

    /// Sends the held request to a worker for its recheck; when the queue is full (or the pool
    /// stopped), answers `expire()` instead: the client asks again, nothing is lost.
    private func startRecheck(_ connection: Connection) {
        guard let held = releaseHeld(connection) else { return }
        held.wait.waiter.release()
        connection.withWorker = true
        let job = WorkerPool.Job(connection: connection, request: held.request, loop: self, recheck: held.wait)
        switch pool.submit(job) {
        case .accepted:
            return
        case .full, .stopped:
            connection.withWorker = false
            context.logger.debug(
                "answered a woken request without its recheck: worker queue full",
                metadata: ["connection": "\(connection.info.id)"])
            respond(to: held, on: connection, closing: true)
        }
    }

    private func respond(to held: HeldRequest, on connection: Connection, closing: Bool) {
        let response = held.wait.expire()
        held.wait.waiter.end()
        connection.waitDeadline = nil
        if closing { connection.closeAfterOutput = true }
        connection.queueResponse(response, to: held.request, context: context)
    }

    /// Takes the held request off its connection (nil when there is none).
    private func releaseHeld(_ connection: Connection) -> HeldRequest? {
        guard let held = connection.heldRequest else { return nil }
        connection.heldRequest = nil
        connection.deadlineKind = .none
        connection.deadline = .max
        context.counters.waitingRequests.subtract(1, ordering: .relaxed)
        return held
    }

    private static func adding(_ nanoseconds: Int64, to instant: Int64) -> Int64 {
        let (sum, overflow) = instant.addingReportingOverflow(nanoseconds)
        return overflow ? .max : sum
    }
}
