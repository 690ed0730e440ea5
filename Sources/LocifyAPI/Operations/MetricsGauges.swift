import ChangeNotifications
import Locify

/// The state `/metrics` reports besides the request counters, read from the parts of the server
/// the composition root owns (HTTP server, database pool, clean-up queue, long-poll) at each scrape.
public struct MetricsGauges: Sendable {
    /// Connections the HTTP server holds open.
    public var openConnections: Int
    /// Database connections in use.
    public var poolInUse: Int
    /// Database connections idle.
    public var poolIdle: Int
    /// Requests waiting for a database connection.
    public var poolWaiting: Int
    /// Clean-up jobs pending that never failed.
    public var cleanupPending: Int64
    /// Clean-up jobs that failed and wait for a retry.
    public var cleanupFailed: Int64
    /// Clean-up jobs failed for good (kept for an operator).
    public var cleanupFailedPermanent: Int64
    /// Storage clean-ups skipped because the object name cannot exist, by reason.
    public var cleanupSkipped: [(reason: String, count: Int)]
    /// Whether unsigned Auth-emulator tokens are accepted.
    public var authEmulatorMode: Bool
    /// Long-poll pulls: waiting now, woken, notifications, listener reconnects (nil when off).
    public var live: LiveChanges.Statistics?

    /// The gauges of one scrape.
    public init(
        openConnections: Int, poolInUse: Int, poolIdle: Int, poolWaiting: Int, cleanupPending: Int64, cleanupFailed: Int64,
        cleanupFailedPermanent: Int64 = 0, cleanupSkipped: [(reason: String, count: Int)] = [], authEmulatorMode: Bool,
        live: LiveChanges.Statistics? = nil
    ) {
        self.openConnections = openConnections
        self.poolInUse = poolInUse
        self.poolIdle = poolIdle
        self.poolWaiting = poolWaiting
        self.cleanupPending = cleanupPending
        self.cleanupFailed = cleanupFailed
        self.cleanupFailedPermanent = cleanupFailedPermanent
        self.cleanupSkipped = cleanupSkipped
        self.authEmulatorMode = authEmulatorMode
        self.live = live
    }
}
