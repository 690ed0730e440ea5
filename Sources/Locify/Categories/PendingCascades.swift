import FoundationEssentials
import Postgres

/// The cascades whose locations are still to be turned into tombstones (migrations/0008).
/// Deleting a live category without a reassign records it in the user's `hiding` list and answers,
/// in a transaction whose work does not grow with the category; its locations are hidden
/// afterwards, at the stamp of the category's tombstone, as the delete itself would have, by the
/// cascade worker of `LocifyJobs` in bounded batches (`settleBatch`), each its own transaction
/// that also queues the Storage clean-up of the locations it hides: each location's clean-up is
/// queued once, with the row that became its tombstone. Until a cascade leaves the list, reads
/// leave its remaining locations out (`LocationStore`) and the change feed delivers them as
/// tombstones at that stamp (`FeedStore`): a location reads the same hidden or not, so partial
/// progress is invisible.
///
/// Writes settle nothing ahead (a user's write waits at most on the batch the worker holds):
/// a write to a location still shown in a pending category hides that row first
/// (`LocationStore.findForWrite`), and a write to a category tombstone, the one write whose
/// follow-up (`LocationStore.follow`) reads the category graph whole, settles every pending
/// cascade of the user first (`CategoryStore.findForWrite`). Both queue the clean-up of what they hide.
public struct PendingCascades: Sendable {
    /// What the clean-up of a hidden location may delete.
    let storage: StorageScope

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

    /// Hides up to `limit` locations of the user's oldest pending cascade, at its stamp, queues
    /// their clean-up, and drops the cascade from the list once none is left; returns whether the
    /// list is empty. Runs under the user's write lock (`nextUser`, or a write's), one batch per
    /// transaction.
    @discardableResult
    public func settleBatch(_ connection: PostgresConnection, userID: String, limit: Int) throws -> Bool {
        guard let cascade = try CategoryStore.pendingCascades(connection, userID: userID).first else { return true }
        let hidden = try LocationStore.hideBatch(
            connection, userID: userID, category: cascade.category, stamp: cascade.stamp, limit: limit)
        try queueCleanup(connection, userID: userID, of: hidden, shownIn: cascade.category)
        guard hidden.count < limit else { return false }
        return try UserStore.removeCascade(connection, userID: userID, category: cascade.category)
    }

    /// Hides the locations of every cascade in the user's list, each at its category's stamp,
    /// queues their clean-up and empties the list, in the caller's transaction: for a write to a
    /// category tombstone, whose follow-up reads the whole category graph. Runs under the user's
    /// write lock.
    func settle(_ connection: PostgresConnection, userID: String) throws {
        let cascades = try CategoryStore.pendingCascades(connection, userID: userID)
        guard !cascades.isEmpty else { return }
        for cascade in cascades {
            let hidden = try LocationStore.follow(connection, userID: userID, category: cascade.category, stamp: cascade.stamp)
            try queueCleanup(connection, userID: userID, of: hidden, shownIn: cascade.category)
        }
        try UserStore.clearCascades(connection, userID: userID)
    }

    /// Queues the Storage clean-up of locations a cascade of `category` hid; the category's own
    /// folder was queued by its delete, so objects inside it are left to that job.
    func queueCleanup(_ connection: PostgresConnection, userID: String, of hidden: [HiddenLocation], shownIn category: UUID) throws {
        try storage.queueCleanup(
            connection, userID: userID, locations: hidden, queuedBefore: CleanupJob.categoryFolders(userID: userID, id: category))
    }
}
