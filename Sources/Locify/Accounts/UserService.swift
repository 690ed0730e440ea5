import LocifyRules
import Postgres
import Primitives

/// The caller's own account (openapi.yaml): profile, rename, and deletion that erases every
/// row of the user in one transaction and queues the Google clean-up in that same transaction.
public struct UserService: Sendable {
    let accounts: Accounts

    /// The caller's profile, provisioning the account on its first request.
    public func profile(_ caller: Caller) throws -> UserProfile {
        guard let profile = try accounts.read(caller, UserStore.profile(caller)).first else { throw LocifyError.tokenRevoked }
        return profile
    }

    /// `PUT /v1/users/me`: renames the user; once the gate passed, the name must pass the name rule
    /// (`ProfileRules.name`: trimmed, 1-255 code points, no control characters; E001 otherwise),
    /// and is stored trimmed.
    public func update(_ caller: Caller, name raw: String) throws -> UserProfile {
        try accounts.write(caller) { transaction in
            let name = try LocifyError.applying(ProfileRules.name, to: raw)
            transaction.markChanged()
            guard let profile = try UserStore.rename(transaction.connection, userID: caller.userID, to: name, at: accounts.now())
            else { throw LocifyError.tokenRevoked }
            return profile
        }
    }

    /// `DELETE /v1/users/me`: erases categories, locations, tombstones and the profile, records
    /// the deletion second (older tokens are refused from then on), and queues deletion of the
    /// user's Storage folders and then of the Firebase Auth account, all in one transaction.
    public func delete(_ caller: Caller) throws {
        // Every location goes: a pending cascade needs no settling.
        try accounts.write(caller) { transaction in
            // Its waiting pulls are woken, to be answered 401.
            transaction.markChanged()
            let connection = transaction.connection
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
