import FoundationEssentials
import LocifyRules
import Postgres
import Primitives

/// The reads and field-level last-write-wins writes categories and locations share, over the SQL
/// of one `RecordTable`. `CategoryService` and `LocationService` hold one each and add what only
/// their table has (listing, a category delete's reassign or cascade). Every write is decided by
/// `FieldLastWriteWins` on the row read under the user's write lock, and stored by one statement.
struct RecordService<Table: RecordTable>: Sendable {
    typealias Record = Table.Record
    typealias Rule = FieldLastWriteWins<Record.Field>

    let accounts: Accounts
    var now: @Sendable () -> Timestamp { accounts.now }

    /// The caller's live record `id`; E007 when it is unknown, deleted or another user's.
    func get(_ caller: Caller, id: UUID) throws -> Record {
        guard let found = try accounts.read(caller, Table.getQuery(caller, id: id)).first ?? nil else {
            throw LocifyError.notFound(Record.kind)
        }
        return found
    }

    /// What a write stored over an existing record runs around the statement that stores it
    /// (the third argument, which returns the record written), in its transaction, given the record
    /// before: by default only that statement.
    typealias AroundUpdate = (AccountTransaction, Record, () throws -> Record) throws -> Record

    /// A create (POST, upsert when the id exists) or replace (PUT): a write of every field.
    func write(
        _ caller: Caller, _ draft: Table.Draft, creating: Bool, aroundUpdate: AroundUpdate = { _, _, update in try update() }
    ) throws -> WriteOutcome<Record> {
        if creating, let created = try createFast(caller, draft) { return .created(created) }
        return try apply(caller, draft.patch, creating ? .create : .replace, inserting: draft, aroundUpdate: aroundUpdate)
    }

    /// A PATCH: a write of the fields the patch carries; E007 when the id was never created.
    func patch(
        _ caller: Caller, _ patch: Table.Patch, aroundUpdate: AroundUpdate = { _, _, update in try update() }
    ) throws -> WriteOutcome<Record> {
        try apply(caller, patch, .patch(patch.fields), inserting: nil, aroundUpdate: aroundUpdate)
    }

    /// What a write's transaction committed: an answer, or a 409 whose fields were kept under the
    /// tombstone (answered once they are committed).
    private enum Applied {
        case answer(WriteOutcome<Record>)
        case conflictKept(RecordState)
    }

    private func apply(
        _ caller: Caller, _ patch: Table.Patch, _ intent: Rule.Intent, inserting draft: Table.Draft?,
        aroundUpdate: AroundUpdate
    ) throws -> WriteOutcome<Record> {
        let applied: Applied
        do {
            applied = try accounts.write(caller) { transaction in
                let (connection, stamp) = (transaction.connection, transaction.stamp)
                let stored = try Table.findForWrite(connection, userID: caller.userID, id: patch.id, cascades: accounts.cascades)
                let now = self.now()
                let decision = Rule.decide(
                    intent, stored: stored?.fieldClock, requested: patch.updatedAt, now: now,
                    sameValue: { field in stored.map { patch.hasSameValue(field, as: $0) } ?? false })
                // A location's category must be one of the user's live categories: the schema's
                // trigger checks it in the same statement (SQLSTATE LC001, E007 through `CategoryGuard`).
                switch (decision.outcome, stored, decision.clock) {
                case (.inserted, _, _):
                    guard let draft else { throw LocifyError.notFound(Record.kind) }
                    transaction.markChanged()
                    return .answer(
                        .created(
                            try Table.insert(
                                connection, userID: caller.userID, draft, at: decision.at, createdAt: min(draft.createdAt ?? decision.at, now),
                                stamp: stamp)))
                case (.updated, let stored?, let clock?):
                    transaction.markChanged()
                    let written = try aroundUpdate(transaction, stored) {
                        try Table.update(
                            connection, userID: caller.userID, patch, setting: decision.setting, clock: clock, over: stored, stamp: stamp)
                    }
                    return .answer(.updated(written))
                case (.replayed, let stored?, _):
                    return .answer(.unchanged(stored))
                case (.conflict, let stored?, let clock?):
                    // Fields older than the write but not newer than the tombstone are kept, hidden,
                    // so a comeback shows each field's newest value whatever the arrival order.
                    guard decision.changesRecord else { throw LocifyError.conflict(stored.state) }
                    _ = try Table.update(
                        connection, userID: caller.userID, patch, setting: decision.setting, clock: clock, over: stored, stamp: stamp)
                    return .conflictKept(stored.state)
                default:
                    throw LocifyError.notFound(Record.kind)
                }
            }
        } catch {
            throw CategoryGuard.mapping(error)
        }
        switch applied {
        case .answer(let outcome): return outcome
        case .conflictKept(let state): throw LocifyError.conflict(state)
        }
    }

    /// The common case of a create, a new id, in one statement (see `RecordTable.insertIfNew` and
    /// `Accounts.writeInOneStatement`); nil sends the write down the general path, which tells
    /// every other case apart (a location's category that is not live, a revoked token included).
    private func createFast(_ caller: Caller, _ draft: Table.Draft) throws -> Record? {
        let now = self.now()
        let at = Rule.decide(.create, stored: nil, requested: draft.updatedAt, now: now, sameValue: { _ in false }).at
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
                guard let stored = try Table.findForWrite(connection, userID: caller.userID, id: id, cascades: accounts.cascades) else {
                    throw LocifyError.notFound(Record.kind)
                }
                let decision = Rule.decide(.delete, stored: stored.fieldClock, requested: updatedAt, now: now(), sameValue: { _ in false })
                switch (decision.outcome, decision.clock) {
                case (.deleted, let clock?):
                    transaction.markChanged()
                    let tombstone = try Table.tombstone(connection, userID: caller.userID, id: id, clock: clock, stamp: stamp)
                    try afterTombstone(transaction, stored, tombstone)
                    return tombstone
                case (.conflict, _):
                    throw LocifyError.conflict(stored.state)
                default:
                    return stored
                }
            }
        } catch {
            throw CategoryGuard.mapping(error)
        }
    }
}
