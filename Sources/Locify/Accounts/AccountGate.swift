import LocifyRules
import Postgres
import Primitives

/// The account check every `/v1` request passes, folded into the statements that touch the
/// user's row anyway (its condition is one SQL fragment, `UserStore.gate`): provisions the
/// account on first sight (with the default categories) and refuses tokens issued at or before
/// the account's deletion (openapi.yaml). Services reach it only through the door, `Accounts`.
/// `now` is the calling service's clock (injected in tests); it stamps a new account's `created_at`.
enum AccountGate {
    /// Locks the caller's user row until the transaction ends and returns the next change stamp
    /// (see `SyncCursor`): the first statement of every write transaction, run by the door
    /// (`Accounts.write`). Settles no pending cascade: the rows a write touches settle what they
    /// need (`PendingCascades`), so a write waits at most on the cascade worker's batch.
    static func lock(_ connection: PostgresConnection, _ caller: Caller, now: @Sendable () -> Timestamp) throws -> Int64 {
        while true {
            if let next = try UserStore.nextStamp(connection, caller) {
                guard next.admitted else { throw LocifyError.tokenRevoked }
                return next.stamp
            }
            try provision(connection, caller, now: now)
        }
    }

    /// Creates the user row and the default categories unless the row exists. Idempotent and
    /// safe under concurrency (a concurrent first request waits on the row and does nothing).
    static func provision(_ connection: PostgresConnection, _ caller: Caller, now: @Sendable () -> Timestamp) throws {
        let deletion = try UserStore.lastDeletion(connection, caller)
        guard deletion.admitted else { throw LocifyError.tokenRevoked }
        let profile = Self.profile(of: caller)
        try UserStore.create(
            connection, userID: caller.userID, email: profile.email, name: profile.name, tokensValidAfter: deletion.second,
            at: now())
    }

    /// The profile a new account takes from the token's claims. A `name` that breaks the name
    /// rules (openapi.yaml) is stored trimmed when that makes it valid, else left out, and an
    /// `email` holding a control character is left out: a claim PostgreSQL cannot store (NUL) must
    /// not fail every request of that user with a 500.
    static func profile(of caller: Caller) -> (email: String?, name: String?) {
        let name = caller.name.flatMap { try? ProfileRules.name($0) }
        let email = caller.email.flatMap { $0.unicodeScalars.contains(where: ControlCharacter.isControl) ? nil : $0 }
        return (email, name)
    }

    /// Runs a gated read: provisions and retries once when the account does not exist yet, then
    /// refuses a revoked token; returns the rows.
    static func read<Row>(
        _ connection: PostgresConnection, _ caller: Caller, _ read: GatedRead<Row>, now: @Sendable () -> Timestamp
    ) throws -> [Row] {
        if let rows = try readExisting(connection, read) { return rows }
        try provision(connection, caller, now: now)
        guard let rows = try readExisting(connection, read) else { throw LocifyError.tokenRevoked }
        return rows
    }

    /// Runs a gated read without provisioning: nil when the account does not exist yet; a revoked
    /// token throws.
    static func readExisting<Row>(_ connection: PostgresConnection, _ read: GatedRead<Row>) throws -> [Row]? {
        guard let result = try read.decode(connection.query(read.query)), let admitted = result.admitted else { return nil }
        guard admitted else { throw LocifyError.tokenRevoked }
        return result.rows
    }
}

/// A read of the caller's user row `u` whose first column is the account gate's verdict
/// (`UserStore.gate`) and whose rows then hold `row`'s columns: a read gated in its own round
/// trip. `AccountGate.read` runs it.
struct GatedRead<Row> {
    let query: PostgresQuery
    let row: ColumnSet<Row>

    /// `SELECT <gate>, <row's columns> <from>`; `from` reads the caller's user row as `u`.
    init(_ caller: Caller, _ row: ColumnSet<Row>, _ from: PostgresQuery) {
        self.init(caller, row, selecting: row.width == 0 ? from : "\(unsafeSQL: row.sql) \(from)")
    }

    /// `SELECT <gate>, <selection>`, where `selection` begins with `row`'s columns (a statement
    /// that writes its select list with its own binds).
    init(_ caller: Caller, _ row: ColumnSet<Row>, selecting selection: PostgresQuery) {
        self.row = row
        // The gate leads the text but binds last, so only its short text is renumbered.
        query = selection.prepending("SELECT \(UserStore.gate(caller))\(unsafeSQL: row.width == 0 ? " " : ", ")")
    }

    /// The gate's verdict and, when it admits the caller, the row of each result row; nil when
    /// there is no row (no account).
    func decode(_ rows: PostgresRows) throws(PostgresError) -> (admitted: Bool?, rows: [Row])? {
        guard let first = rows.first else { return nil }
        var gate = ColumnReader(first)
        let admitted = try gate.next(Bool?.self)
        guard admitted == true else { return (admitted, []) }
        var decoded: [Row] = []
        decoded.reserveCapacity(rows.count)
        for result in rows {
            var column = ColumnReader(result)
            _ = try column.next(Bool?.self)
            decoded.append(try row.decode(&column))
        }
        return (admitted, decoded)
    }
}
