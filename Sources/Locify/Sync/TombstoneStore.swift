import Postgres

/// The SQL of the tombstone purge (the `TombstonePurger` of `LocifyJobs`): tombstones older than
/// the retention go in batches, and each user's `purged_seq` records the highest stamp removed,
/// so the feed knows exactly which cursors lost a delete (`SyncCursor.mayHaveMissed`).
public enum TombstoneStore {
    /// The tables whose tombstones are purged, locations first: a category tombstone's removal
    /// cascades to its locations' rows.
    public enum Table: CaseIterable, Sendable {
        case locations, categories
    }

    /// Removes up to `limit` tombstones of `table` whose `changed_at` is older than
    /// `retentionSeconds` and raises their owners' `purged_seq`, in one statement; returns how
    /// many went. A category tombstone stays while something still follows it: a location shown
    /// in its reassign target, a deleted category reassigned to it, or its pending cascade.
    public static func purge(_ connection: PostgresConnection, _ table: Table, retentionSeconds: Int64, limit: Int64) throws -> Int64 {
        let (name, stillFollowed) = table == .locations ? ("locations", "") : ("categories", followedCategory)
        let count = ColumnSet<Int64>(expression: "count(*)")
        return try connection.query(
            """
            WITH purged AS (
                DELETE FROM \(unsafeSQL: name) WHERE (user_id, id) IN (
                    SELECT user_id, id FROM \(unsafeSQL: name) t
                    WHERE deleted_at IS NOT NULL
                      AND changed_at < now() - make_interval(secs => \(Double(retentionSeconds)))
                      \(unsafeSQL: stillFollowed)
                    LIMIT \(limit))
                RETURNING user_id, change_seq
            ), marked AS (
                UPDATE users u SET purged_seq = GREATEST(u.purged_seq, p.seq)
                FROM (SELECT user_id, max(change_seq) AS seq FROM purged GROUP BY user_id) p
                WHERE u.id = p.user_id
            )
            SELECT \(unsafeSQL: count.sql) FROM purged
            """
        ).first.map(count.decode) ?? 0
    }

    /// Forgets account deletions older than every token issued before them (Firebase tokens
    /// last an hour; kept 7 days).
    public static func forgetOldDeletions(_ connection: PostgresConnection) throws {
        try connection.query("DELETE FROM account_deletions WHERE deleted_at < now() - interval '7 days'")
    }

    /// The condition that keeps a category tombstone `t` that something still follows.
    private static let followedCategory = """
        AND NOT EXISTS (SELECT 1 FROM locations l
                        WHERE l.user_id = t.user_id AND l.own_category_id = t.id AND l.deleted_at IS NULL)
        AND NOT EXISTS (SELECT 1 FROM categories r WHERE r.user_id = t.user_id AND r.reassigned_to = t.id AND r.id <> t.id)
        AND NOT EXISTS (SELECT 1 FROM users u WHERE u.id = t.user_id AND t.id = ANY (u.hiding))
        """
}
