import FoundationEssentials
import Postgres

/// The cascades whose locations are still to be turned into tombstones (migrations/0008, 0010).
/// Deleting a live category without a reassign records it in the user's `hiding` list with the
/// delete's stamp and answers, in a transaction whose work does not grow with the category; its
/// locations are hidden afterwards, at that stamp, as the delete itself would have, by the
/// cascade worker of `LocifyJobs` in bounded batches (`settleBatch`), each its own transaction
/// that also queues the Storage clean-up of the locations it hides: each location's clean-up is
/// queued once, with the row that became its tombstone. Until a cascade leaves the list, reads
/// leave its remaining locations out (`LocationStore`) and the change feed delivers them as
/// tombstones at that stamp (`FeedStore`): a location reads the same hidden or not, so partial
/// progress is invisible.
///
/// Writes settle nothing ahead (a user's write waits at most on the batch the worker holds),
/// only the rows they move: a write to a location still shown in a pending category hides that
/// row first (`LocationStore.findForWrite`), and a write that moves the locations of a category
/// tombstone (bringing it back, deleting it again with a reassign) hides first those a pending
/// cascade still shows (`settle(aheadOfMoving:)`), each queuing the clean-up of what it hides. Any
/// other write to a category tombstone (deleting it again with a cascade, a write it refuses)
/// settles nothing: the locations a pending cascade shows stay deleted, and `LocationStore.follow`
/// leaves them so, to be hidden by the worker at that cascade's stamp.
public struct PendingCascades: Sendable {
    /// What the clean-up of a hidden location may delete.
    let storage: StorageScope

    /// Adds `category`, just deleted by a cascade whose tombstone has `stamp`, to the user's list.
    /// Runs under the user's write lock.
    static func record(_ connection: PostgresConnection, userID: String, category: UUID, stamp: Int64) throws {
        try UserStore.addCascade(connection, userID: userID, category: category, stamp: stamp)
    }

    /// The user whose oldest pending cascade is the oldest of all, skipping `skipping`; locked for
    /// the rest of the transaction (after a write or another instance's batch holding the row).
    /// Nil when there is none.
    public static func nextUser(_ connection: PostgresConnection, skipping: [String]) throws -> String? {
        try UserStore.oldestPendingCascadeUser(connection, skipping: skipping)
    }

    /// Hides up to `limit` locations of the user's oldest pending cascade, at its stamp, queues
    /// their clean-up, and drops the cascade from the list once none is left. Runs under the
    /// user's write lock (`nextUser`, or a write's), one batch per transaction. `after` is where
    /// the previous batch of the user left off (nil: from the start): a batch starts there instead
    /// of walking past the rows hidden before it.
    public func settleBatch(
        _ connection: PostgresConnection, userID: String, limit: Int, after: SettlingPosition? = nil
    ) throws -> SettledBatch {
        guard let cascade = try CategoryStore.pendingCascades(connection, userID: userID).first else {
            return SettledBatch(listEmpty: true, position: nil)
        }
        // A position of another cascade (or of this category deleted before) says nothing here.
        let resume = after.flatMap { $0.category == cascade.category && $0.stamp == cascade.stamp ? ($0.createdAt, $0.id) : nil }
        let batch = try LocationStore.hideBatch(
            connection, userID: userID, category: cascade.category, stamp: cascade.stamp, limit: limit, after: resume)
        try queueCleanup(connection, userID: userID, of: batch.hidden, shownIn: cascade.category)
        if batch.hidden.count == limit, let last = batch.last {
            return SettledBatch(
                listEmpty: false,
                position: SettlingPosition(category: cascade.category, stamp: cascade.stamp, createdAt: last.createdAt, id: last.id))
        }
        // None is left after the position, nor before it: no location becomes live in a deleted
        // category (the schema refuses it, LC001), and earlier batches hid those before it.
        let listEmpty = try UserStore.removeCascade(connection, userID: userID, category: cascade.category)
        return SettledBatch(listEmpty: listEmpty, position: nil)
    }

    /// Settles what a pending cascade still shows of the locations a write is about to move out of
    /// the category tombstone `category` (bringing it back, or deleting it again with a reassign),
    /// so that the write's follow-up (`LocationStore.follow`, which leaves a pending cascade's rows
    /// as the tombstones they read as) moves them from the tombstones a settled cascade leaves:
    /// the live locations placed in `category` or in a category reassigned to it, all shown in
    /// the category deleted with a cascade where `category`'s reassign chain ends, are hidden at
    /// that cascade's stamp, their clean-up queued. When that category is `category` itself, its
    /// cascade leaves the list. Any other cascade, and any other location, is left to the worker.
    /// The work grows with the locations the write moves anyway. Runs under the user's write lock,
    /// in the write's transaction, before the write changes where `category` shows its locations.
    func settle(_ connection: PostgresConnection, userID: String, aheadOfMoving category: UUID) throws {
        let pending = try CategoryStore.pendingCascades(connection, userID: userID)
        guard !pending.isEmpty else { return }
        let graph = try CategoryGraph.load(connection, userID: userID)
        guard let end = graph.cascadeEnd(of: category), let cascade = pending.first(where: { $0.category == end }) else { return }
        let whole = end == category
        let hidden = try LocationStore.hidePending(
            connection, userID: userID, shownIn: end, stamp: cascade.stamp, placedIn: whole ? nil : graph.dependents(of: category))
        try queueCleanup(connection, userID: userID, of: hidden, shownIn: end)
        if whole { _ = try UserStore.removeCascade(connection, userID: userID, category: end) }
    }

    /// Queues the Storage clean-up of locations a cascade of `category` hid; the category's own
    /// folder was queued by its delete, so objects inside it are left to that job.
    func queueCleanup(_ connection: PostgresConnection, userID: String, of hidden: [HiddenLocation], shownIn category: UUID) throws {
        try storage.queueCleanup(
            connection, userID: userID, locations: hidden, queuedBefore: CleanupJob.categoryFolders(userID: userID, id: category))
    }
}

/// What one batch of `PendingCascades.settleBatch` did.
public struct SettledBatch: Sendable {
    /// Whether the user's list of pending cascades is empty now.
    public let listEmpty: Bool
    /// Where the next batch of the user starts; nil when the cascade is settled.
    public let position: SettlingPosition?
}

/// The last location a batch hid, in the order batches take a cascade's locations (newest
/// first, then by id), with the cascade it belongs to (its category and stamp: the category
/// deleted again is another cascade).
public struct SettlingPosition: Sendable, Equatable {
    let category: UUID
    let stamp: Int64
    /// Its `created_at` as PostgreSQL prints it (to the microsecond).
    let createdAt: String
    let id: UUID
}
