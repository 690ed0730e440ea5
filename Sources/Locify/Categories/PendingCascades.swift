import FoundationEssentials
import Postgres

/// The cascades whose locations are still to be turned into tombstones (migrations/0008).
/// Deleting a live category without a reassign records it in the user's `hiding` list and answers;
/// `settle` hides its locations afterwards, at the stamp of the category's tombstone, as the delete
/// itself would have. It runs in the transaction of the user's next write (`Accounts.write`),
/// so writes never meet a live location in a deleted category, or else in the background (the
/// cascade worker of `LocifyJobs`). Until then reads leave those locations out (`LocationStore`)
/// and the change feed delivers them as tombstones at that stamp (`FeedStore`).
public enum PendingCascades {
    /// Adds `category`, just deleted by a cascade, to the user's list. Runs under the user's write lock.
    static func record(_ connection: PostgresConnection, userID: String, category: UUID) throws {
        try UserStore.addCascade(connection, userID: userID, category: category)
    }

    /// Hides the locations of every cascade in the user's list, each at its category's stamp, and
    /// empties the list. Runs under the user's write lock (every write takes it first, so no write
    /// came between a cascade and its settling).
    public static func settle(_ connection: PostgresConnection, userID: String) throws {
        for cascade in try CategoryStore.pendingCascades(connection, userID: userID) {
            _ = try LocationStore.follow(connection, userID: userID, category: cascade.category, stamp: cascade.stamp)
        }
        try UserStore.clearCascades(connection, userID: userID)
    }
}
