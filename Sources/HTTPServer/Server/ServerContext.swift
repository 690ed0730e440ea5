import Glibc
import Logging
import Synchronization

/// What every thread of a running server shares: the application, the configuration (with its
/// durations converted to nanoseconds once), the date cache and the counters.
final class ServerContext: Sendable {
    let configuration: HTTPServerConfiguration
    let limits: HTTPRequestParser.Limits
    let responder: any HTTPResponder
    let logger: Logger
    let counters: ServerCounters
    let bodyBudget: BodyBudget
    let addressConnections: AddressConnections
    let dateCache: HTTPDateCache
    /// The eventfd the acceptor sleeps on while the connection limit is reached (owned: closed
    /// when the context goes away); -1 without an acceptor (`InProcessHTTPServer`).
    let acceptorWakeFD: Int32

    /// Set once `shutdown` begins: responses then carry `Connection: close`.
    let isDraining = Atomic<Bool>(false)

    let headerReadTimeout: Int64
    let bodyReadTimeout: Int64
    let keepAliveIdleTimeout: Int64
    let writeTimeout: Int64
    let lingeringCloseTimeout: Int64
    let timerResolution: Int64
    let bodyRateGracePeriod: Int64

    init(
        configuration: HTTPServerConfiguration, responder: any HTTPResponder, logger: Logger,
        counters: ServerCounters, acceptorWakeFD: Int32
    ) {
        self.configuration = configuration
        self.limits = HTTPRequestParser.Limits(configuration: configuration)
        self.responder = responder
        self.logger = logger
        self.counters = counters
        self.bodyBudget = BodyBudget(
            budget: configuration.maxBufferedBodyBytes, share: configuration.maxBufferedBodyBytesPerClient,
            counters: counters)
        self.addressConnections = AddressConnections(limit: configuration.maxConnectionsPerAddress)
        self.acceptorWakeFD = acceptorWakeFD
        self.dateCache = HTTPDateCache(clock: configuration.wallClock)
        headerReadTimeout = configuration.headerReadTimeout.nanosecondsClamped
        bodyReadTimeout = configuration.bodyReadTimeout.nanosecondsClamped
        keepAliveIdleTimeout = configuration.keepAliveIdleTimeout.nanosecondsClamped
        writeTimeout = configuration.writeTimeout.nanosecondsClamped
        lingeringCloseTimeout = configuration.lingeringCloseTimeout.nanosecondsClamped
        timerResolution = max(1_000_000, configuration.timerResolution.nanosecondsClamped)
        bodyRateGracePeriod = configuration.bodyRateGracePeriod.nanosecondsClamped
    }

    deinit {
        // Closed only when nothing can signal it any more (a worker finishing late still may).
        if acceptorWakeFD >= 0 { Glibc.close(acceptorWakeFD) }
    }

    /// The current time of the configured clock, in nanoseconds.
    func now() -> Int64 { configuration.clock.nowNanoseconds() }

    /// The 503 the server answers when it is overloaded (`reason` for the logs).
    func overloaded(_ reason: String) -> HTTPRequestError {
        HTTPRequestError(
            status: .serviceUnavailable, reason: reason, retryAfterSeconds: configuration.overloadRetryAfterSeconds)
    }

    /// The 429 the server answers a client over its share of the body budget.
    func overShare() -> HTTPRequestError {
        HTTPRequestError(
            status: .tooManyRequests, reason: "the client's share of the request body budget is used up",
            retryAfterSeconds: configuration.overloadRetryAfterSeconds)
    }

    /// Whether connections hold more pipelined input and queued output than
    /// `maxBufferedConnectionBytes`: they then read and parse ahead less.
    var connectionBuffersOverBudget: Bool {
        counters.bufferedConnectionBytes.load(ordering: .relaxed) > configuration.maxBufferedConnectionBytes
    }

    /// Accounts for a closed connection from `clientAddress`; wakes the acceptor if it was
    /// waiting at the limit.
    func connectionClosed(clientAddress: String) {
        addressConnections.close(clientAddress)
        let (previous, _) = counters.openConnections.subtract(1, ordering: .acquiringAndReleasing)
        if previous >= configuration.maxConnections && acceptorWakeFD >= 0 {
            SocketIO.signal(eventFD: acceptorWakeFD)
        }
    }
}

/// Counters read by the metrics getters of `HTTPServer`.
final class ServerCounters: Sendable {
    /// Open client connections (accepted and not yet closed).
    let openConnections = Atomic<Int>(0)
    /// Requests waiting for a worker thread.
    let queuedRequests = Atomic<Int>(0)
    /// Bytes of the body budget held by connections (`maxBufferedBodyBytes`).
    let bufferedBodyBytes = Atomic<Int>(0)
    /// Bytes of pipelined input and queued output connections hold (`maxBufferedConnectionBytes`).
    let bufferedConnectionBytes = Atomic<Int>(0)
    /// Connections closed at once because their address had `maxConnectionsPerAddress` open.
    let refusedConnections = Atomic<Int>(0)
    /// Connections closed (idle or busy) to admit new ones at `maxConnections`.
    let evictedConnections = Atomic<Int>(0)
    /// The source of `ConnectionInfo.id`.
    let nextConnectionID = Atomic<UInt64>(1)
    /// Requests held by the event loops for their `HTTPWait`.
    let waitingRequests = Atomic<Int>(0)
}
