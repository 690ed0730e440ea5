import LocifyRules
import Postgres
import Primitives

/// The account check every `/v1` request passes, folded into the statements that touch the
/// user's row anyway: provisions the account on first sight (with the default categories) and
/// refuses tokens issued at or before the account's deletion (openapi.yaml). `now` is the
/// calling service's clock (injected in tests); it stamps a new account's `created_at`.
enum AccountGate {
    /// Locks the caller's user row until the transaction ends and returns the next change stamp
    /// (see `SyncCursor`): the first statement of every write transaction.
    static func beginWrite(_ connection: PostgresConnection, _ caller: Caller, now: @Sendable () -> Timestamp) throws -> Int64 {
        while true {
            let rows = try connection.query(
                """
                UPDATE users SET change_seq = change_seq + 1 WHERE id = \(caller.userID)
                RETURNING change_seq, tokens_valid_after
                """)
            if let row = rows.first {
                try check(tokensValidAfter: row.decode(1), caller)
                return try row.decode(0)
            }
            try provision(connection, caller, now: now)
        }
    }

    /// Refuses a token issued at or before the account's (last) deletion.
    static func check(tokensValidAfter: Int64, _ caller: Caller) throws(LocifyError) {
        if caller.tokenIssuedAt <= tokensValidAfter { throw .tokenRevoked }
    }

    /// Creates the user row and the default categories unless the row exists. Idempotent and
    /// safe under concurrency (a concurrent first request waits on the row and does nothing).
    static func provision(_ connection: PostgresConnection, _ caller: Caller, now: @Sendable () -> Timestamp) throws {
        let deletions = try connection.query(
            "SELECT deleted_second FROM account_deletions WHERE user_id = \(caller.userID)")
        let deletedSecond: Int64 = try deletions.first?.decode(0) ?? -1
        try check(tokensValidAfter: deletedSecond, caller)
        let defaults = DefaultCategories.all
        let now = now()
        let profile = Self.profile(of: caller)
        try connection.query(
            """
            WITH new_user AS (
                INSERT INTO users (id, email, name, change_seq, tokens_valid_after, created_at, updated_at)
                VALUES (\(caller.userID), \(profile.email), \(profile.name), 1, \(deletedSecond), \(now), \(now))
                ON CONFLICT (id) DO NOTHING
                RETURNING id
            )
            INSERT INTO categories (user_id, id, name, name_key, version, created_at, updated_at, change_seq)
            SELECT new_user.id, d.id, d.name, d.name_key, 1, \(Timestamp.epoch), \(Timestamp.epoch), 1
            FROM new_user, unnest(\(defaults.map(\.id)), \(defaults.map(\.name)), \(defaults.map { TextRules.sortKey($0.name) }))
                 AS d(id, name, name_key)
            """)
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

    /// Provisions the account on first sight and refuses a revoked token, for a request that may
    /// otherwise touch no row of the user (a sync push whose changes all fail validation).
    static func admit(_ connection: PostgresConnection, _ caller: Caller, now: @Sendable () -> Timestamp) throws {
        try read(connection, caller, "SELECT tokens_valid_after FROM users WHERE id = \(caller.userID)", now: now) { _ in }
    }

    /// Runs a read whose first column is the user's `tokens_valid_after` (NULL or no row when the
    /// account does not exist yet): provisions and retries once when needed, then checks the token.
    static func read<T>(
        _ connection: PostgresConnection, _ caller: Caller, _ query: PostgresQuery, now: @Sendable () -> Timestamp,
        _ decode: (PostgresRows) throws -> T
    ) throws -> T {
        var rows = try connection.query(query)
        if rows.first?.isNull(0) ?? true {
            try provision(connection, caller, now: now)
            rows = try connection.query(query)
        }
        guard let first = rows.first else { throw LocifyError.tokenRevoked }
        try check(tokensValidAfter: first.decode(0), caller)
        return try decode(rows)
    }
}
