import FoundationEssentials
import Postgres

/// The SQL of the change feed: snapshot pages (live records by id, up to the snapshot's stamp)
/// and delta pages (every record, live or tombstone, after a position in stamp order). Every
/// query is an index range scan: `(user_id, id)` for snapshots, `(user_id, change_seq, id)` for
/// deltas, so a page costs the same at any history length.
enum FeedStore {
    /// Live records of `kind` stamped at or before `highWater`, after `afterID` by id.
    static func snapshot(
        _ connection: PostgresConnection, _ kind: RecordKind, userID: String, highWater: Int64, afterID: UUID,
        limit: Int
    ) throws -> [RecordState] {
        // A location of a pending cascade is deleted already (`PendingCascades`).
        let (table, notHidden) =
            kind == .category
            ? ("categories r", "") : ("locations r JOIN users u ON u.id = r.user_id", " AND r.\(LocationStore.notHiding("u.hiding"))")
        let rows = try connection.query(
            """
            SELECT \(unsafeSQL: states(kind).sql) FROM \(unsafeSQL: table)
            WHERE r.user_id = \(userID) AND r.deleted_at IS NULL AND r.change_seq <= \(highWater) AND r.id > \(afterID)\(unsafeSQL: notHidden)
            ORDER BY r.id
            LIMIT \(Int64(limit))
            """)
        return try rows.map(states(kind).decode)
    }

    /// Records of `kind` (live or tombstones) after position (`seq`, `rank`, `afterID`) in the
    /// order (change_seq, kind, id), with their stamps.
    static func delta(
        _ connection: PostgresConnection, _ kind: RecordKind, userID: String, after cursor: SyncCursor, limit: Int
    ) throws -> [(stamp: Int64, state: RecordState)] {
        let table = kind == .category ? "categories" : "locations"
        // Rows at the cursor's own stamp come after it when their (rank, id) does.
        let rank = Int64(cursor.rank)
        let sameStamp: PostgresQuery =
            kind == .category
            ? "\(rank) = 0 AND r.id > \(cursor.afterID)" : "\(rank) = 0 OR (\(rank) = 1 AND r.id > \(cursor.afterID))"
        let row = ColumnSet<Int64>(expression: "r.change_seq").then(states(kind))
        let rows = try connection.query(
            """
            SELECT \(unsafeSQL: row.sql) FROM \(unsafeSQL: table) r
            WHERE r.user_id = \(userID) AND r.change_seq >= \(cursor.seq) AND (r.change_seq > \(cursor.seq) OR \(sameStamp))
            ORDER BY r.change_seq, r.id
            LIMIT \(Int64(limit))
            """)
        return try rows.map { result throws(PostgresError) in
            let (stamp, state) = try row.decode(result)
            return (stamp, state)
        }
    }

    /// The locations of the user's pending cascades (`PendingCascades`) as the tombstones settling
    /// them will write, each at its cascade's stamp: after position (`seq`, `rank`, `afterID`) in
    /// the order of `delta`, with their stamps.
    static func pendingTombstones(
        _ connection: PostgresConnection, userID: String, after cursor: SyncCursor, limit: Int
    ) throws -> [(stamp: Int64, state: RecordState)] {
        let rows = try connection.query(
            """
            SELECT h.stamp, r.id, r.updated_at FROM users u
            CROSS JOIN unnest(u.hiding, u.hiding_stamps) AS h(category, stamp)
            JOIN locations r ON r.user_id = u.id AND r.category_id = h.category AND r.deleted_at IS NULL
            WHERE u.id = \(userID) AND h.stamp >= \(cursor.seq)
              AND (h.stamp > \(cursor.seq) OR \(Int64(cursor.rank)) = 0 OR (\(Int64(cursor.rank)) = 1 AND r.id > \(cursor.afterID)))
            ORDER BY h.stamp, r.id
            LIMIT \(Int64(limit))
            """)
        return try rows.map { row throws(PostgresError) in
            var column = ColumnReader(row)
            let stamp: Int64 = try column.next()
            return (stamp, .tombstone(.location, id: try column.next(), deletedAt: try column.next()))
        }
    }

    /// The record columns of `kind` under the alias `r`, decoded as its state (a tombstone when
    /// deleted).
    private static func states(_ kind: RecordKind) -> ColumnSet<RecordState> {
        switch kind {
        case .category: return Category.columns("r").map { $0.state }
        case .location: return Location.columns("r").map { $0.state }
        }
    }
}
