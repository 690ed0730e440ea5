import Locify
import Logging
import Postgres

/// Periodically removes tombstones older than the retention (measured on the server's clock by
/// `changed_at`, never on the client's `deleted_at`), in small batches so no long lock is held.
/// A cursor issued before the horizon is refused with E009, so no client can miss a purged delete.
/// A category tombstone stays while something still follows it: a location shown in its reassign
/// target, a deleted category reassigned to it (openapi.yaml, "Writes in any order"), or its
/// cascade, until settled (`PendingCascades`).
public final class TombstonePurger: Sendable {
    private let pool: ConnectionPool
    private let retentionSeconds: Int64
    private let interval: Duration
    private let logger: Logger
    private let task: PeriodicTask
    /// Rows deleted per statement.
    static let batchSize: Int64 = 5000

    /// A purger of tombstones older than `retentionSeconds`, run every `interval` once started.
    public init(pool: ConnectionPool, retentionSeconds: Int64, interval: Duration, logger: Logger) {
        self.pool = pool
        self.retentionSeconds = retentionSeconds
        self.interval = interval
        self.logger = logger
        self.task = PeriodicTask(name: "locify.tombstone-purge", interval: interval) {
            TombstonePurger.purge(pool: pool, retentionSeconds: retentionSeconds, logger: logger)
        }
    }

    /// Starts the periodic purge on its own thread.
    public func start() { task.start() }
    /// Starts no further pass; returns at once.
    public func drain() { task.drain() }
    /// Stops the periodic purge and waits for a running pass to end.
    public func stop() { task.stop() }

    /// Purges now; returns how many tombstones went.
    @discardableResult
    public func purgeNow() -> Int {
        TombstonePurger.purge(pool: pool, retentionSeconds: retentionSeconds, logger: logger)
    }

    @discardableResult
    private static func purge(pool: ConnectionPool, retentionSeconds: Int64, logger: Logger) -> Int {
        var removed = 0
        do {
            for table in TombstoneStore.Table.allCases {
                while true {
                    let count = try pool.withConnection { connection in
                        try TombstoneStore.purge(connection, table, retentionSeconds: retentionSeconds, limit: batchSize)
                    }
                    removed += Int(count)
                    if count < batchSize { break }
                }
            }
            try pool.withConnection(TombstoneStore.forgetOldDeletions)
            if removed > 0 { logger.info("purged tombstones", metadata: ["count": "\(removed)"]) }
        } catch {
            logger.warning("tombstone purge failed; will retry", metadata: ["error": "\(error)"])
        }
        return removed
    }
}
