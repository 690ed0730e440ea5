import FoundationEssentials
import LocifyRules
import Postgres
import Primitives

/// The reads and last-write-wins writes categories and locations share, over the SQL of one
/// `RecordTable`. `CategoryService` and `LocationService` hold one each and add what only their
/// table has (listing, a category delete's reassign or cascade).
struct RecordService<Table: RecordTable>: Sendable {
    typealias Record = Table.Record

    let pool: ConnectionPool
    let now: @Sendable () -> Timestamp

    /// The caller's live record `id`; E007 when it is unknown, deleted or another user's.
    func get(_ caller: Caller, id: UUID) throws -> Record {
        let found = try pool.withConnection { connection in
            try AccountGate.read(connection, caller, Table.getQuery(userID: caller.userID, id: id), now: now) { rows in
                try rows.first.flatMap { row throws(PostgresError) in row.isNull(1) ? nil : try Record(row: row, at: 1) }
            }
        }
        guard let found else { throw LocifyError.notFound(Record.kind.name) }
        return found
    }

    /// A create (POST, upsert when the id exists) or replace (PUT) under last-write-wins.
    func write(_ caller: Caller, _ draft: Table.Draft, _ intent: LastWriteWins.Intent) throws -> WriteOutcome<Record> {
        if intent == .create, let created = try createFast(caller, draft) { return .created(created) }
        do {
            return try writeInTransaction(caller, draft, intent)
        } catch {
            throw CategoryGuard.mapping(error)
        }
    }

    private func writeInTransaction(_ caller: Caller, _ draft: Table.Draft, _ intent: LastWriteWins.Intent) throws -> WriteOutcome<Record> {
        try pool.withTransaction { connection in
            let stamp = try AccountGate.beginWrite(connection, caller, now: now)
            let stored = try Table.find(connection, userID: caller.userID, id: draft.id)
            let now = self.now()
            let decision = LastWriteWins.decide(
                intent, stored: stored?.clock, requested: draft.updatedAt,
                sameContent: stored.map(draft.hasSameContent) ?? false, now: now)
            // A location's category must be one of the user's live categories: the schema's
            // trigger checks it in the same statement (SQLSTATE LC001, E007 through `CategoryGuard`).
            return try decision.applyWrite(
                stored: stored,
                insert: { at in
                    try Table.insert(
                        connection, userID: caller.userID, draft, at: at, createdAt: min(draft.createdAt ?? at, now), stamp: stamp)
                },
                overwrite: { at in try Table.overwrite(connection, userID: caller.userID, draft, at: at, stamp: stamp) })
        }
    }

    /// The common case of a create, a new id, in one statement (see `RecordTable.insertIfNew`);
    /// nil sends the write down the general path, which tells every other case apart (a
    /// location's category that is not live included).
    private func createFast(_ caller: Caller, _ draft: Table.Draft) throws -> Record? {
        let now = self.now()
        guard case .insert(let at) = LastWriteWins.decide(.create, stored: nil, requested: draft.updatedAt, sameContent: false, now: now)
        else { return nil }
        do {
            return try pool.withConnection { connection in
                try Table.insertIfNew(connection, caller, draft, at: at, createdAt: min(draft.createdAt ?? at, now))
            }
        } catch let error as PostgresError where error.sqlState == CategoryGuard.sqlState {
            return nil
        }
    }

    /// DELETE: tombstones the record (idempotent) and returns the tombstone. `check` runs after
    /// the account gate (a revoked token is 401 before a bad request is 400); `beforeTombstone`
    /// runs when the delete wins, before the record is tombstoned, with the stored record, the
    /// delete's time and the change stamp.
    func delete(
        _ caller: Caller, id: UUID, updatedAt: Timestamp?, check: () throws -> Void = {},
        beforeTombstone: (PostgresConnection, Record, Timestamp, Int64) throws -> Void = { _, _, _, _ in }
    ) throws -> Record {
        do {
            return try pool.withTransaction { connection in
                let stamp = try AccountGate.beginWrite(connection, caller, now: now)
                try check()
                let stored = try Table.find(connection, userID: caller.userID, id: id)
                let decision = LastWriteWins.decide(
                    .delete, stored: stored?.clock, requested: updatedAt, sameContent: false, now: now())
                return try decision.applyDelete(stored: stored) { at in
                    if let stored { try beforeTombstone(connection, stored, at, stamp) }
                    return try Table.tombstone(connection, userID: caller.userID, id: id, at: at, stamp: stamp)
                }
            }
        } catch {
            throw CategoryGuard.mapping(error)
        }
    }
}
