import LocifyRules
import Postgres
import Primitives

/// The caller's own account (openapi.yaml): profile, rename, and deletion that erases every
/// row of the user in one transaction and queues the Google clean-up in that same transaction.
public struct UserService: Sendable {
    let pool: ConnectionPool
    let now: @Sendable () -> Timestamp

    /// Runs the account gate alone: provisions a new account and refuses a token issued before
    /// the account's deletion (`LocifyError.tokenRevoked`).
    public func admit(_ caller: Caller) throws {
        try pool.withConnection { connection in try AccountGate.admit(connection, caller, now: now) }
    }

    /// The caller's profile, provisioning the account on its first request.
    public func profile(_ caller: Caller) throws -> UserProfile {
        try pool.withConnection { connection in
            guard let profile = try AccountGate.read(connection, caller, UserStore.profile(caller), now: now).first else {
                throw LocifyError.tokenRevoked
            }
            return profile
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
            guard let profile = try UserStore.rename(connection, userID: caller.userID, to: name, at: now()) else {
                throw LocifyError.tokenRevoked
            }
            return profile
        }
    }

    /// `DELETE /v1/users/me`: erases categories, locations, tombstones and the profile, records
    /// the deletion second (older tokens are refused from then on), and queues deletion of the
    /// user's Storage folders and then of the Firebase Auth account, all in one transaction.
    public func delete(_ caller: Caller) throws {
        try pool.withTransaction { connection in
            // Every location goes: a pending cascade needs no settling.
            _ = try AccountGate.beginWrite(connection, caller, now: now)
            let userID = caller.userID
            var jobs: [CleanupJob] = []
            if CleanupJob.isFolderSafe(userID: userID) {
                jobs += UserStorageFolder.allCases.map { CleanupJob(kind: .storagePrefix, target: $0.prefix(uid: userID)) }
            }
            jobs.append(CleanupJob(kind: .authAccount, target: userID))
            try CleanupJobStore.enqueue(connection, userID: userID, jobs)
            // Every row goes, so the counters need no maintenance.
            try LocationStore.skipCounters(connection, true)
            try LocationStore.deleteAll(connection, userID: userID)
            try CategoryStore.deleteAll(connection, userID: userID)
            try UserStore.erase(connection, userID: userID)
        }
    }
}
