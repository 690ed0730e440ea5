import Locify
import Logging
import Postgres

/// Settles the cascades whose locations are still to be hidden (`PendingCascades`): woken after
/// each category delete, and every `interval` for those another instance, or one that stopped,
/// left behind. A user's next write settles them too; whichever comes first does it. Each user
/// settled is announced after the commit (`announce`: their waiting pulls are woken).
public final class CascadeWorker: Sendable {
    private let pool: ConnectionPool
    private let announce: ChangeAnnouncer?
    private let logger: Logger
    private let task: PeriodicTask

    /// A worker on `pool`, run every `interval` once started, telling `announce` each user it settled.
    public init(pool: ConnectionPool, interval: Duration = .seconds(5), announce: ChangeAnnouncer? = nil, logger: Logger) {
        self.pool = pool
        self.announce = announce
        self.logger = logger
        self.task = PeriodicTask(name: "locify.cascade-worker", interval: interval) {
            _ = CascadeWorker.settleAll(pool: pool, announce: announce, logger: logger)
        }
    }

    /// Starts the worker on its own thread.
    public func start() { task.start() }
    /// Looks for pending cascades now (after a category delete).
    public func wake() { task.wake() }
    /// Stops after the user being settled, if any.
    public func stop() { task.stop() }

    /// Settles every user's pending cascades now; returns how many users it settled.
    @discardableResult
    public func settleNow() -> Int { Self.settleAll(pool: pool, announce: announce, logger: logger) }

    private static func settleAll(pool: ConnectionPool, announce: ChangeAnnouncer?, logger: Logger) -> Int {
        var settled = 0
        do {
            while let userID = try settleNext(pool: pool) {
                settled += 1
                announce?(userID)
            }
        } catch {
            logger.warning("settling cascades failed; will retry", metadata: ["error": "\(error)"])
        }
        return settled
    }

    /// Settles one user with pending cascades whom no other transaction holds (a write settles
    /// them itself; another instance's worker has them): the user, once committed; nil when there
    /// is none left.
    private static func settleNext(pool: ConnectionPool) throws -> String? {
        try pool.withTransaction { connection in
            let userID = try connection.query(
                "SELECT id FROM users WHERE hiding <> '{}' LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED"
            ).first.map { row throws(PostgresError) in try row.decode(0, as: String.self) }
            guard let userID else { return nil }
            try PendingCascades.settle(connection, userID: userID)
            return userID
        }
    }
}
