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
        let table = kind == .category ? "categories" : "locations"
        let rows = try connection.query(
            """
            SELECT \(unsafeSQL: states(kind).sql) FROM \(unsafeSQL: table) r
            WHERE r.user_id = \(userID) AND r.deleted_at IS NULL AND r.change_seq <= \(highWater) AND r.id > \(afterID)
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
        let sameStamp = kind == .category ? "$3 = 0 AND r.id > $4" : "$3 = 0 OR ($3 = 1 AND r.id > $4)"
        let row = ColumnSet<Int64>(expression: "r.change_seq").then(states(kind))
        let sql = """
            SELECT \(row.sql) FROM \(table) r
            WHERE r.user_id = $1 AND r.change_seq >= $2 AND (r.change_seq > $2 OR \(sameStamp))
            ORDER BY r.change_seq, r.id
            LIMIT $5
            """
        let rows = try connection.query(
            PostgresQuery(
                unsafeSQL: sql,
                binds: [
                    PostgresBind(userID), PostgresBind(cursor.seq), PostgresBind(Int64(cursor.rank)),
                    PostgresBind(cursor.afterID), PostgresBind(Int64(limit)),
                ]))
        return try rows.map { result throws(PostgresError) in
            let (stamp, state) = try row.decode(result)
            return (stamp, state)
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
