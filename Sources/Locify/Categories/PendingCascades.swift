import FoundationEssentials
import Postgres

/// The cascades whose locations are still to be turned into tombstones (migrations/0008).
/// Deleting a live category without a reassign records it in the user's `hiding` list and answers;
/// its locations are hidden afterwards, at the stamp of the category's tombstone, as the delete
/// itself would have, by the cascade worker of `LocifyJobs` in bounded batches (`settleBatch`),
/// each its own transaction. Until a cascade leaves the list, reads leave its remaining locations
/// out (`LocationStore`) and the change feed delivers them as tombstones at that stamp
/// (`FeedStore`): a location reads the same hidden or not, so partial progress is invisible.
///
/// Writes settle nothing ahead (a user's write waits at most on the batch the worker holds):
/// a write to a location still shown in a pending category hides that row first
/// (`LocationStore.findForWrite`), and a write to a category tombstone, the one write whose
/// follow-up (`LocationStore.follow`) reads the category graph whole, settles every pending
/// cascade of the user first (`CategoryStore.findForWrite`).
public enum PendingCascades {
    /// Adds `category`, just deleted by a cascade, to the user's list. Runs under the user's write lock.
    static func record(_ connection: PostgresConnection, userID: String, category: UUID) throws {
        try UserStore.addCascade(connection, userID: userID, category: category)
    }

    /// The user whose oldest pending cascade is the oldest of all, skipping `skipping`; locked for
    /// the rest of the transaction (after a write or another instance's batch holding the row).
    /// Nil when there is none.
    public static func nextUser(_ connection: PostgresConnection, skipping: [String]) throws -> String? {
        try UserStore.oldestPendingCascadeUser(connection, skipping: skipping)
    }

    /// Hides up to `limit` locations of the user's oldest pending cascade, at its stamp, and drops
    /// the cascade from the list once none is left; returns whether the list is empty. Runs under
    /// the user's write lock (`nextUser`, or a write's), one batch per transaction.
    @discardableResult
    public static func settleBatch(_ connection: PostgresConnection, userID: String, limit: Int) throws -> Bool {
        guard let cascade = try CategoryStore.pendingCascades(connection, userID: userID).first else { return true }
        let hidden = try LocationStore.hideBatch(
            connection, userID: userID, category: cascade.category, stamp: cascade.stamp, limit: limit)
        guard hidden < limit else { return false }
        return try UserStore.removeCascade(connection, userID: userID, category: cascade.category)
    }

    /// Hides the locations of every cascade in the user's list, each at its category's stamp, and
    /// empties the list, in the caller's transaction: for a write to a category tombstone, whose
    /// follow-up reads the whole category graph. Runs under the user's write lock.
    static func settle(_ connection: PostgresConnection, userID: String) throws {
        let cascades = try CategoryStore.pendingCascades(connection, userID: userID)
        guard !cascades.isEmpty else { return }
        for cascade in cascades {
            _ = try LocationStore.follow(connection, userID: userID, category: cascade.category, stamp: cascade.stamp)
        }
        try UserStore.clearCascades(connection, userID: userID)
    }
}
