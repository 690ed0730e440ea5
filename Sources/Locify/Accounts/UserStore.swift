import FoundationEssentials
import LocifyRules
import Postgres
import Primitives

/// The SQL of the users table and of account deletions, and the account gate's condition, the
/// one SQL fragment every statement that gates a request uses (`gate`).
enum UserStore {
    /// The account gate: whether the caller's token was issued after `validAfter` (by default
    /// the user row `u`'s `tokens_valid_after`, the second of the account's last deletion). A
    /// token issued at or before it is revoked (openapi.yaml).
    static func gate(_ caller: Caller, validAfter column: String = "u.tokens_valid_after") -> PostgresQuery {
        "(\(unsafeSQL: column) < \(caller.tokenIssuedAt))"
    }

    /// A profile's columns of the user row `u`.
    static let profileColumns = ColumnSet(["id", "email", "name", "created_at", "updated_at"], alias: "u") {
        column throws(PostgresError) in
        UserProfile(
            id: try column.next(), email: try column.next(), name: try column.next(), createdAt: try column.next(),
            updatedAt: try column.next())
    }

    /// Takes the next change stamp of the caller's row, which locks it until the transaction ends;
    /// nil when the account does not exist yet. Returns the stamp and the gate's verdict.
    static func nextStamp(_ connection: PostgresConnection, _ caller: Caller) throws -> (stamp: Int64, admitted: Bool)? {
        try connection.query(
            """
            UPDATE users SET change_seq = change_seq + 1 WHERE id = \(caller.userID)
            RETURNING change_seq, \(gate(caller, validAfter: "tokens_valid_after"))
            """
        ).first.map { row throws(PostgresError) in
            var column = ColumnReader(row)
            return (try column.next(), try column.next())
        }
    }

    /// The statement of a write's one-statement fast path that takes the caller's next change
    /// stamp (as `change_seq`), only when the account exists and the gate admits the token.
    static func nextStampIfAdmitted(_ caller: Caller) -> PostgresQuery {
        """
        UPDATE users SET change_seq = change_seq + 1
        WHERE id = \(caller.userID) AND \(gate(caller, validAfter: "tokens_valid_after"))
        RETURNING change_seq
        """
    }

    /// Adds a category to the user's pending cascades (`PendingCascades`), with the stamp its
    /// locations are to be hidden at (migrations/0010).
    static func addCascade(_ connection: PostgresConnection, userID: String, category: UUID, stamp: Int64) throws {
        try connection.query(
            """
            UPDATE users SET hiding = array_append(hiding, \(category)), hiding_stamps = array_append(hiding_stamps, \(stamp))
            WHERE id = \(userID)
            """)
    }

    /// Drops a settled cascade from the user's list, and its stamp beside it; returns whether the
    /// list is empty now.
    static func removeCascade(_ connection: PostgresConnection, userID: String, category: UUID) throws -> Bool {
        // The two arrays lose the same position (0, none, when the category is not in the list).
        let position: PostgresQuery = "COALESCE(array_position(hiding, \(category)), 0)"
        return try connection.query(
            """
            UPDATE users SET hiding = hiding[:\(position) - 1] || hiding[\(position) + 1:],
                             hiding_stamps = hiding_stamps[:\(position) - 1] || hiding_stamps[\(position) + 1:]
            WHERE id = \(userID)
            RETURNING hiding = '{}'
            """
        ).first.map { row throws(PostgresError) in
            var column = ColumnReader(row)
            return try column.next(Bool.self)
        } ?? true
    }

    /// The user, other than `skipping`, whose oldest pending cascade (the first of `hiding`) has the
    /// oldest tombstone, locked (after the write or batch holding the row, if any: skipping a
    /// locked row left the worker idle until its next round whenever a write held it).
    static func oldestPendingCascadeUser(_ connection: PostgresConnection, skipping: [String]) throws -> String? {
        try connection.query(
            """
            SELECT u.id FROM users u JOIN categories c ON c.user_id = u.id AND c.id = u.hiding[1]
            WHERE u.hiding <> '{}' AND u.id <> ALL (\(skipping))
            ORDER BY c.changed_at, u.id
            LIMIT 1
            FOR NO KEY UPDATE OF u
            """
        ).first.map { row throws(PostgresError) in
            var column = ColumnReader(row)
            return try column.next(String.self)
        }
    }

    /// The second of the account's last deletion (-1 when it never was) and whether the gate
    /// admits the caller's token against it.
    static func lastDeletion(_ connection: PostgresConnection, _ caller: Caller) throws -> (second: Int64, admitted: Bool) {
        let validAfter = "COALESCE(max(d.deleted_second), -1)"
        let rows = try connection.query(
            """
            SELECT \(unsafeSQL: validAfter), \(gate(caller, validAfter: validAfter))
            FROM account_deletions d WHERE d.user_id = \(caller.userID)
            """)
        guard let row = rows.first else { throw PostgresError(kind: .server, message: "an aggregate returned no row") }
        var column = ColumnReader(row)
        return (try column.next(), try column.next())
    }

    /// Creates the user row with the default categories unless the row exists (then does
    /// nothing; a concurrent first request waits on the row).
    static func create(
        _ connection: PostgresConnection, userID: String, email: String?, name: String?, tokensValidAfter: Int64,
        at now: Timestamp
    ) throws {
        let defaults = DefaultCategories.all
        try connection.query(
            """
            WITH new_user AS (
                INSERT INTO users (id, email, name, change_seq, tokens_valid_after, created_at, updated_at)
                VALUES (\(userID), \(email), \(name), 1, \(tokensValidAfter), \(now), \(now))
                ON CONFLICT (id) DO NOTHING
                RETURNING id
            )
            INSERT INTO categories (user_id, id, name, name_key, version, created_at, updated_at, change_seq)
            SELECT new_user.id, d.id, d.name, d.name_key, 1, \(Timestamp.epoch), \(Timestamp.epoch), 1
            FROM new_user, unnest(\(defaults.map(\.id)), \(defaults.map(\.name)), \(defaults.map { TextRules.sortKey($0.name) }))
                 AS d(id, name, name_key)
            """)
    }

    /// The gate alone.
    static func admitted(_ caller: Caller) -> GatedRead<Void> {
        GatedRead(caller, ColumnSet([]) { _ throws(PostgresError) in }, caller.ownRow)
    }

    /// The caller's profile.
    static func profile(_ caller: Caller) -> GatedRead<UserProfile> {
        GatedRead(caller, profileColumns, caller.ownRow)
    }

    /// Renames the user; returns the profile, or nil when the row is gone.
    static func rename(_ connection: PostgresConnection, userID: String, to name: String, at now: Timestamp) throws -> UserProfile? {
        try connection.query(
            """
            UPDATE users u SET name = \(name), updated_at = \(now) WHERE u.id = \(userID)
            RETURNING \(unsafeSQL: profileColumns.sql)
            """
        ).first.map(profileColumns.decode)
    }

    /// Erases the user row and records the deletion second: tokens issued at or before it are
    /// refused from then on, by the gate of the next account under the same id too.
    static func erase(_ connection: PostgresConnection, userID: String) throws {
        try connection.query("DELETE FROM users WHERE id = \(userID)")
        try connection.query(
            """
            INSERT INTO account_deletions (user_id, deleted_second, deleted_at)
            VALUES (\(userID), floor(extract(epoch FROM now()))::bigint, now())
            ON CONFLICT (user_id) DO UPDATE SET deleted_second = EXCLUDED.deleted_second, deleted_at = EXCLUDED.deleted_at
            """)
    }

    /// Where a pull's snapshot stands for the user: the last stamp handed out, the server's time,
    /// when the account was created and up to which stamp tombstones were purged.
    struct FeedHead {
        var highWater: Int64
        var serverNow: Timestamp
        var accountCreatedAt: Timestamp
        var purgedThrough: Int64
        /// Whether cascades wait to be settled (`PendingCascades`).
        var cascadesPending: Bool
    }

    /// The caller's `FeedHead`.
    static func feedHead(_ caller: Caller) -> GatedRead<FeedHead> {
        let columns = ColumnSet(["u.change_seq", "now()", "u.created_at", "u.purged_seq", "u.hiding <> '{}'"]) {
            column throws(PostgresError) in
            FeedHead(
                highWater: try column.next(), serverNow: try column.next(), accountCreatedAt: try column.next(),
                purgedThrough: try column.next(), cascadesPending: try column.next())
        }
        return GatedRead(caller, columns, caller.ownRow)
    }
}

extension Caller {
    /// The `FROM` clause of a read of the caller's user row alone, as `u`.
    fileprivate var ownRow: PostgresQuery { "FROM users u WHERE u.id = \(userID)" }
}
