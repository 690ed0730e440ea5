import LocifyRules
import Postgres
import Primitives

/// The caller's own account (openapi.yaml): profile, rename, and deletion that erases every
/// row of the user in one transaction and queues the Google clean-up in that same transaction.
public struct UserService: Sendable {
    let pool: ConnectionPool
    let now: @Sendable () -> Timestamp

    private static let profileColumns = "u.id, u.email, u.name, u.created_at, u.updated_at"

    /// Runs the account gate alone: provisions a new account and refuses a token issued before
    /// the account's deletion (`LocifyError.tokenRevoked`).
    public func admit(_ caller: Caller) throws {
        try pool.withConnection { connection in try AccountGate.admit(connection, caller, now: now) }
    }

    /// The caller's profile, provisioning the account on its first request.
    public func profile(_ caller: Caller) throws -> UserProfile {
        try pool.withConnection { connection in
            try AccountGate.read(
                connection, caller,
                "SELECT u.tokens_valid_after, \(unsafeSQL: Self.profileColumns) FROM users u WHERE u.id = \(caller.userID)",
                now: now
            ) { rows in
                guard let row = rows.first else { throw LocifyError.tokenRevoked }
                return try UserService.profile(row, at: 1)
            }
        }
    }

    /// The name rule of a profile (`ProfileRules.name`: trimmed, 1-255 code points, no control
    /// characters; E001 otherwise): the name as stored. The API applies it while decoding the request.
    public static func name(_ raw: String) throws(LocifyError) -> String {
        try LocifyError.applying(ProfileRules.name, to: raw)
    }

    /// `PUT /v1/users/me`: renames the user; the name must pass the name rule (`name(_:)`).
    public func update(_ caller: Caller, name raw: String) throws -> UserProfile {
        let name = try Self.name(raw)
        return try pool.withTransaction { connection in
            _ = try AccountGate.beginWrite(connection, caller, now: now)
            let rows = try connection.query(
                """
                UPDATE users u SET name = \(name), updated_at = \(now()) WHERE u.id = \(caller.userID)
                RETURNING \(unsafeSQL: Self.profileColumns)
                """)
            guard let row = rows.first else { throw LocifyError.tokenRevoked }
            return try UserService.profile(row, at: 0)
        }
    }

    /// `DELETE /v1/users/me`: erases categories, locations, tombstones and the profile, records
    /// the deletion second (older tokens are refused from then on), and queues deletion of the
    /// user's Storage folders and then of the Firebase Auth account, all in one transaction.
    public func delete(_ caller: Caller) throws {
        try pool.withTransaction { connection in
            _ = try AccountGate.beginWrite(connection, caller, now: now)
            let userID = caller.userID
            var jobs: [CleanupJob] = []
            if CleanupJob.isFolderSafe(userID: userID) {
                jobs += UserStorageFolder.allCases.map { CleanupJob(kind: .storagePrefix, target: $0.prefix(uid: userID)) }
            }
            jobs.append(CleanupJob(kind: .authAccount, target: userID))
            try CleanupJobStore.enqueue(connection, userID: userID, jobs)
            // Every row goes, so the counters need no maintenance.
            try connection.query("SELECT set_config('locify.skip_counters', 'on', true)")
            try connection.query("DELETE FROM locations WHERE user_id = \(userID)")
            try connection.query("DELETE FROM categories WHERE user_id = \(userID)")
            try connection.query("DELETE FROM users WHERE id = \(userID)")
            try connection.query(
                """
                INSERT INTO account_deletions (user_id, deleted_second, deleted_at)
                VALUES (\(userID), floor(extract(epoch FROM now()))::bigint, now())
                ON CONFLICT (user_id) DO UPDATE SET deleted_second = EXCLUDED.deleted_second, deleted_at = EXCLUDED.deleted_at
                """)
        }
    }

    private static func profile(_ row: PostgresRow, at start: Int) throws(PostgresError) -> UserProfile {
        UserProfile(
            id: try row.decode(start), email: try row.decode(start + 1), name: try row.decode(start + 2),
            createdAt: try row.decode(start + 3), updatedAt: try row.decode(start + 4))
    }
}
