/// What a responder answers a request with: a response now, or a wait (long-poll).
public enum HTTPAnswer: Sendable {
    /// Send this response.
    case response(HTTPResponse)
    /// Hold the request on its connection's event loop, with no worker thread, until its waiter
    /// is woken or its time is up.
    case wait(HTTPWait)
}

/// A request held on its connection's event loop without a thread: when `waiter` is woken,
/// `recheck` runs on a worker and answers (or waits again); when `timeout` has passed, when
/// `HTTPServer.answerWaitingRequests()` is called and when the server drains, the loop answers
/// `expire()` at once. A held connection is not read (its client's further requests wait in the
/// socket), counts as open against `maxConnections`, and is released when its client hangs up.
public struct HTTPWait: Sendable {
    /// The handle other threads wake the request through.
    public var waiter: HTTPWaiter
    /// How long the request is held, counted from the first time it was held: a recheck that
    /// waits again keeps that deadline.
    public var timeout: Duration
    /// The answer when the wait ends without a wake; runs on the I/O thread, so it must be cheap
    /// and never block.
    public var expire: @Sendable () -> HTTPResponse
    /// What a wake runs, on a worker thread (it may block): the response, or another wait (with
    /// the same waiter, to keep listening).
    public var recheck: @Sendable () -> HTTPAnswer

    /// A wait of at most `timeout` for `waiter`'s wake.
    public init(
        waiter: HTTPWaiter, timeout: Duration, expire: @escaping @Sendable () -> HTTPResponse,
        recheck: @escaping @Sendable () -> HTTPAnswer
    ) {
        self.waiter = waiter
        self.timeout = timeout
        self.expire = expire
        self.recheck = recheck
    }
}

/// The handle of a waiting request: any thread may `wake` it, and `onEnd` tells the application
/// once that the request is over (answered, or its connection closed), so it can forget it.
///
/// A wake that comes before the request is held (while the handler that made the waiter still
/// runs, or while a recheck runs) is kept and makes the recheck run as soon as the request is
/// held, so registering the waiter before reading what it waits for loses no wake.
public final class HTTPWaiter: Sendable {
    private enum State {
        /// Not held by a loop: its handler or recheck is running.
        case running(wakePending: Bool)
        /// Held by `loop` on connection `connectionID`.
        case held(EventLoop, connectionID: UInt64)
        /// Held, and a wake has been posted to the loop.
        case wakePosted
        case ended
    }

    private let state = HandoffLock(State.running(wakePending: false))
    private let onEnd: @Sendable (HTTPWaiter) -> Void

    /// A waiter; `onEnd` runs once, on whichever thread ends the wait.
    public init(onEnd: @escaping @Sendable (HTTPWaiter) -> Void = { _ in }) {
        self.onEnd = onEnd
    }

    /// Asks for the request's recheck: now when it is held, else as soon as it is. Any thread;
    /// wakes before the recheck runs make one recheck; a wake after the end does nothing.
    public func wake() {
        let target = state.withLock { state -> (EventLoop, UInt64)? in
            switch state {
            case .running:
                state = .running(wakePending: true)
                return nil
            case .held(let loop, let connectionID):
                state = .wakePosted
                return (loop, connectionID)
            case .wakePosted, .ended:
                return nil
            }
        }
        // A loop that has stopped refuses the message; it has ended its waits on the way out.
        if let (loop, connectionID) = target { loop.wake(connectionID: connectionID, waiter: self) }
    }

    /// Ends the wait and runs `onEnd` (the first call only). The server calls it for every wait
    /// it was given; the application calls it for a waiter it made but answered without waiting.
    public func end() {
        let first = state.withLock { state -> Bool in
            if case .ended = state { return false }
            state = .ended
            return true
        }
        if first { onEnd(self) }
    }

    /// Whether the wait is over.
    public var hasEnded: Bool {
        state.withLock { state in
            if case .ended = state { return true }
            return false
        }
    }

    /// What became of a request the loop was about to hold.
    enum Hold {
        /// Held until a wake or its deadline.
        case held
        /// A wake came first: run the recheck now.
        case wakePending
        /// Ended already (by the application): answer it now.
        case ended
    }

    /// The loop holds the request now, unless a wake is pending or the wait has ended.
    func hold(loop: EventLoop, connectionID: UInt64) -> Hold {
        state.withLock { state in
            switch state {
            case .running(let wakePending):
                if wakePending {
                    state = .running(wakePending: false)
                    return .wakePending
                }
                state = .held(loop, connectionID: connectionID)
                return .held
            case .held, .wakePosted:
                state = .held(loop, connectionID: connectionID)
                return .held
            case .ended:
                return .ended
            }
        }
    }

    /// The loop hands the request to a worker for its recheck.
    func release() {
        state.withLock { state in
            if case .ended = state { return }
            state = .running(wakePending: false)
        }
    }
}
