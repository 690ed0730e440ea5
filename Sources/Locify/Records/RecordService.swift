import FoundationEssentials
import LocifyRules
import Postgres
import Primitives

/// The reads and last-write-wins writes categories and locations share, over the SQL of one
/// `RecordTable`. `CategoryService` and `LocationService` hold one each and add what only their
/// table has (listing, a category delete's reassign or cascade).
struct RecordService<Table: RecordTable>: Sendable {
    typealias Record = Table.Record

    let accounts: Accounts
    var now: @Sendable () -> Timestamp { accounts.now }

    /// The caller's live record `id`; E007 when it is unknown, deleted or another user's.
    func get(_ caller: Caller, id: UUID) throws -> Record {
        guard let found = try accounts.read(caller, Table.getQuery(caller, id: id)).first ?? nil else {
            throw LocifyError.notFound(Record.kind)
        }
        return found
    }

    /// A create (POST, upsert when the id exists) or replace (PUT) under last-write-wins.
    /// `afterWrite` runs when the write was stored over an existing record, in its transaction,
    /// with the record before and after.
    func write(
        _ caller: Caller, _ draft: Table.Draft, _ intent: LastWriteWins.Intent,
        afterWrite: (AccountTransaction, Record, Record) throws -> Void = { _, _, _ in }
    ) throws -> WriteOutcome<Record> {
        if intent == .create, let created = try createFast(caller, draft) { return .created(created) }
        do {
            return try writeInTransaction(caller, draft, intent, afterWrite: afterWrite)
        } catch {
            throw CategoryGuard.mapping(error)
        }
    }

    private func writeInTransaction(
        _ caller: Caller, _ draft: Table.Draft, _ intent: LastWriteWins.Intent,
        afterWrite: (AccountTransaction, Record, Record) throws -> Void
    ) throws -> WriteOutcome<Record> {
        try accounts.write(caller) { transaction in
            let (connection, stamp) = (transaction.connection, transaction.stamp)
            let stored = try Table.findForWrite(connection, userID: caller.userID, id: draft.id, cascades: accounts.cascades)
            let now = self.now()
            let decision = LastWriteWins.decide(
                intent, stored: stored?.clock, requested: draft.updatedAt,
                sameContent: stored.map(draft.hasSameContent) ?? false, now: now)
            // A location's category must be one of the user's live categories: the schema's
            // trigger checks it in the same statement (SQLSTATE LC001, E007 through `CategoryGuard`).
            return try decision.applyWrite(
                stored: stored,
                insert: { at in
                    transaction.markChanged()
                    return try Table.insert(
                        connection, userID: caller.userID, draft, at: at, createdAt: min(draft.createdAt ?? at, now), stamp: stamp)
                },
                overwrite: { stored, at in
                    transaction.markChanged()
                    let written = try Table.overwrite(connection, userID: caller.userID, draft, over: stored, at: at, stamp: stamp)
                    try afterWrite(transaction, stored, written)
                    return written
                })
        }
    }

    /// The common case of a create, a new id, in one statement (see `RecordTable.insertIfNew` and
    /// `Accounts.writeInOneStatement`); nil sends the write down the general path, which tells
    /// every other case apart (a location's category that is not live, a revoked token included).
    private func createFast(_ caller: Caller, _ draft: Table.Draft) throws -> Record? {
        let now = self.now()
        guard case .insert(let at) = LastWriteWins.decide(.create, stored: nil, requested: draft.updatedAt, sameContent: false, now: now)
        else { return nil }
        do {
            return try accounts.writeInOneStatement(caller) { connection in
                try Table.insertIfNew(connection, caller, draft, at: at, createdAt: min(draft.createdAt ?? at, now))
            }
        } catch let error as PostgresError where error.sqlState == CategoryGuard.sqlState {
            return nil
        }
    }

    /// DELETE: tombstones the record (idempotent; a newer delete of a tombstone moves it to its
    /// time) and returns the tombstone. `check` runs first, once the gate passed (a refusal of the
    /// delete's options); `afterTombstone` runs when the delete was stored, with the record before
    /// it and the tombstone.
    func delete(
        _ caller: Caller, id: UUID, updatedAt: Timestamp?, check: () throws -> Void = {},
        afterTombstone: (AccountTransaction, Record, Record) throws -> Void = { _, _, _ in }
    ) throws -> Record {
        do {
            return try accounts.write(caller) { transaction in
                try check()
                let (connection, stamp) = (transaction.connection, transaction.stamp)
                let stored = try Table.findForWrite(connection, userID: caller.userID, id: id, cascades: accounts.cascades)
                let decision = LastWriteWins.decide(
                    .delete, stored: stored?.clock, requested: updatedAt, sameContent: false, now: now())
                return try decision.applyDelete(stored: stored) { at in
                    transaction.markChanged()
                    let tombstone = try Table.tombstone(connection, userID: caller.userID, id: id, at: at, stamp: stamp)
                    if let stored { try afterTombstone(transaction, stored, tombstone) }
                    return tombstone
                }
            }
        } catch {
            throw CategoryGuard.mapping(error)
        }
    }
}
