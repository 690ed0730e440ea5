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
    /// Stops the periodic purge and waits for a running pass to end.
    public func stop() { task.stop() }

    /// Purges now; returns how many tombstones went.
    @discardableResult
    public func purgeNow() -> Int {
        TombstonePurger.purge(pool: pool, retentionSeconds: retentionSeconds, logger: logger)
    }

    /// The condition that keeps a category tombstone `t` that something still follows.
    private static let followedCategory = """
        AND NOT EXISTS (SELECT 1 FROM locations l
                        WHERE l.user_id = t.user_id AND l.own_category_id = t.id AND l.deleted_at IS NULL)
        AND NOT EXISTS (SELECT 1 FROM categories r WHERE r.user_id = t.user_id AND r.reassigned_to = t.id AND r.id <> t.id)
        AND NOT EXISTS (SELECT 1 FROM users u WHERE u.id = t.user_id AND t.id = ANY (u.hiding))
        """

    @discardableResult
    private static func purge(pool: ConnectionPool, retentionSeconds: Int64, logger: Logger) -> Int {
        var removed = 0
        do {
            // Locations first: a category tombstone's removal cascades to its locations' rows.
            for (table, stillFollowed) in [("locations", ""), ("categories", followedCategory)] {
                while true {
                    // Each batch also raises the owners' `purged_seq` to the highest stamp it removed,
                    // in the same statement, so the feed knows exactly which cursors lost a delete.
                    let count: Int64 = try pool.withConnection { connection in
                        try connection.query(
                            """
                            WITH purged AS (
                                DELETE FROM \(unsafeSQL: table) WHERE (user_id, id) IN (
                                    SELECT user_id, id FROM \(unsafeSQL: table) t
                                    WHERE deleted_at IS NOT NULL
                                      AND changed_at < now() - make_interval(secs => \(Double(retentionSeconds)))
                                      \(unsafeSQL: stillFollowed)
                                    LIMIT \(batchSize))
                                RETURNING user_id, change_seq
                            ), marked AS (
                                UPDATE users u SET purged_seq = GREATEST(u.purged_seq, p.seq)
                                FROM (SELECT user_id, max(change_seq) AS seq FROM purged GROUP BY user_id) p
                                WHERE u.id = p.user_id
                            )
                            SELECT count(*) FROM purged
                            """
                        ).first?.decode(0) ?? 0
                    }
                    removed += Int(count)
                    if count < batchSize { break }
                }
            }
            // Deletion records outlive every token issued before them (Firebase tokens last an hour).
            _ = try pool.withConnection { connection in
                try connection.query("DELETE FROM account_deletions WHERE deleted_at < now() - interval '7 days'")
            }
            if removed > 0 { logger.info("purged tombstones", metadata: ["count": "\(removed)"]) }
        } catch {
            logger.warning("tombstone purge failed; will retry", metadata: ["error": "\(error)"])
        }
        return removed
    }
}
