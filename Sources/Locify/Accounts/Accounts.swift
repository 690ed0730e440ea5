import LocifyRules
import Postgres
import Primitives

/// Told the user of every transaction that committed a change of that user's data, after the
/// commit: the domain's one word about live changes (the composition root has it notify the
/// instances' waiting pulls, `LiveChanges`).
public typealias ChangeAnnouncer = @Sendable (_ userID: String) -> Void

/// The one door into a user's data: every service reads and writes a user's rows through it, and
/// only after the account gate passed (`AccountGate`: provisions a new account, refuses a token
/// issued at or before the account's deletion), so a service cannot refuse a request before the
/// gate has spoken ("a revoked or deleted account answers 401 before any 400", openapi.yaml).
///
/// - `write` runs one transaction: the gate, the user's write lock and change stamp, then the
///   service's body with an `AccountTransaction`; after the commit, when the body changed anything (`markChanged`), the
///   announcer learns the user. A write that stored nothing (a replay, a refusal) announces nothing.
/// - `writeInOneStatement` is the create fast path: one statement that takes the lock and stamp
///   itself, behind the gate's condition.
/// - `read` runs a gated read: the gate's verdict is the statement's first column, one round trip.
public struct Accounts: Sendable {
    let pool: ConnectionPool
    /// The wall clock every write stamps (a new account's `created_at` too).
    let now: @Sendable () -> Timestamp
    let announce: ChangeAnnouncer?
    /// What a write settles of a pending cascade before it touches a row (`RecordTable.findForWrite`).
    let cascades: PendingCascades

    /// The door to the users' data on `pool`; `announce` hears of every committed change.
    init(pool: ConnectionPool, now: @escaping @Sendable () -> Timestamp, announce: ChangeAnnouncer?, cascades: PendingCascades) {
        self.pool = pool
        self.now = now
        self.announce = announce
        self.cascades = cascades
    }

    /// Runs `body` in a write transaction of the caller's account, once the gate passed, under the
    /// user's write lock, with the change stamp every row it touches carries. It settles no pending
    /// cascade, on purpose: the rows the body touches settle what they need (`PendingCascades`:
    /// `findForWrite` hides a row still in a deleted category, a write of a deleted category the
    /// locations placed in it), so a write waits at most on the cascade worker's batch, never
    /// on another category's cascade. Whatever `body` throws rolls the transaction back.
    func write<T>(_ caller: Caller, _ body: (AccountTransaction) throws -> T) throws -> T {
        var changed = false
        let result = try pool.withTransaction { connection in
            let stamp = try AccountGate.lock(connection, caller, now: now)
            let transaction = AccountTransaction(connection: connection, caller: caller, stamp: stamp, changed: false)
            let result = try body(transaction)
            changed = transaction.changed
            return result
        }
        if changed { announce?(caller.userID) }
        return result
    }

    /// The create fast path: `statement` takes the user's lock and stamp itself, only when the
    /// account exists and the gate admits the token (`UserStore.nextStampIfAdmitted`), and answers
    /// nil when it stored nothing (then the caller takes `write`, where the gate speaks). It settles
    /// no pending cascade, on purpose: a new record is in none (a location's category must be live,
    /// and a cascade's category is deleted).
    func writeInOneStatement<T>(_ caller: Caller, _ statement: (PostgresConnection) throws -> T?) throws -> T? {
        guard let written = try pool.withConnection(statement) else { return nil }
        announce?(caller.userID)
        return written
    }

    /// The rows of a gated read (provisioning the account on first sight). With `preparing`, the
    /// read runs in a transaction that `preparing` begins (session settings for this read only).
    func read<Row>(
        _ caller: Caller, _ read: GatedRead<Row>, preparing: ((PostgresConnection) throws -> Void)? = nil
    ) throws -> [Row] {
        guard let preparing else {
            return try pool.withConnection { connection in try AccountGate.read(connection, caller, read, now: now) }
        }
        return try pool.withTransaction { connection in
            try preparing(connection)
            return try AccountGate.read(connection, caller, read, now: now)
        }
    }

    /// Runs `body` in one REPEATABLE READ, read-only transaction whose first statement is the gated
    /// read `head` (one row of the user's own); a new account is provisioned first, outside it
    /// (provisioning writes).
    func readSnapshot<Head, T>(
        _ caller: Caller, _ head: GatedRead<Head>, _ body: (PostgresConnection, Head) throws -> T
    ) throws -> T {
        func read() throws -> T {
            try pool.withTransaction(isolation: .repeatableRead, readOnly: true) { connection in
                guard let first = try AccountGate.readExisting(connection, head)?.first else { throw AccountMissing() }
                return try body(connection, first)
            }
        }
        do {
            return try read()
        } catch is AccountMissing {
            try pool.withConnection { connection in try AccountGate.provision(connection, caller, now: now) }
            return try read()
        }
    }

    /// `readSnapshot`'s account does not exist yet.
    private struct AccountMissing: Error {}

    /// The gate alone, for a request that touches no row of the user otherwise (a decoding error,
    /// a push with nothing to apply): provisions a new account, refuses a revoked token.
    public func admit(_ caller: Caller) throws {
        _ = try read(caller, UserStore.admitted(caller))
    }
}

/// A write transaction of one user's account, handed to a service by `Accounts.write` once the
/// gate passed: the connection, the caller and the change stamp of the rows it writes.
final class AccountTransaction {
    let connection: PostgresConnection
    let caller: Caller
    /// The change stamp (see `SyncCursor`) every row the transaction writes carries.
    let stamp: Int64
    /// Whether the transaction changed the user's data (announced after the commit).
    private(set) var changed: Bool

    init(connection: PostgresConnection, caller: Caller, stamp: Int64, changed: Bool) {
        self.connection = connection
        self.caller = caller
        self.stamp = stamp
        self.changed = changed
    }

    /// Records that the transaction changed the user's data: once committed, the user's waiting
    /// pulls are woken (`ChangeAnnouncer`).
    func markChanged() {
        changed = true
    }
}
