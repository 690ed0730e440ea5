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
/// only the rows they touch: a write to a location still shown in a pending category hides that
/// row first (`LocationStore.findForWrite`); a write to a category tombstone reassigned into a
/// pending cascade hides first the locations its follow-up (`LocationStore.follow`) reads, those
/// placed in it or in a category reassigned to it (`settle(aheadOfWriteTo:)`); a write that brings
/// back or reassigns the category of a pending cascade settles that cascade (`settleWhole`), its
/// locations coming back or moving with it. A newer delete of that category with a cascade
/// settles nothing: its locations stay deleted at the first delete's stamp. Each queues the
/// clean-up of what it hides.
public struct PendingCascades: Sendable {
    /// What the clean-up of a hidden location may delete.
    let storage: StorageScope

    /// Adds `category`, just deleted by a cascade whose tombstone has `stamp`, to the user's list.
    /// Runs under the user's write lock.
    static func record(_ connection: PostgresConnection, userID: String, category: UUID, stamp: Int64) throws {
        try UserStore.addCascade(connection, userID: userID, category: category, stamp: stamp)
    }

    /// Whether `category`'s cascade is pending.
    static func isPending(_ connection: PostgresConnection, userID: String, category: UUID) throws -> Bool {
        try CategoryStore.pendingCascades(connection, userID: userID).contains { $0.category == category }
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

    /// Settles, ahead of a write to the category tombstone `category` (bringing it back, deleting
    /// it again), what that write's follow-up (`LocationStore.follow`) would otherwise meet of a
    /// pending cascade of another category, where `category`'s reassign chain ends: the live
    /// locations placed in `category` or in a category reassigned to it, all shown in that
    /// category, are hidden at that cascade's stamp, their clean-up queued. Any other cascade is
    /// left to the worker, and so is `category`'s own (`settleWhole`). Runs under the user's write
    /// lock, in the write's transaction, before the write changes `category`'s reassign.
    func settle(_ connection: PostgresConnection, userID: String, aheadOfWriteTo category: UUID) throws {
        let pending = try CategoryStore.pendingCascades(connection, userID: userID)
        guard !pending.isEmpty else { return }
        let graph = try CategoryGraph.load(connection, userID: userID)
        guard let end = graph.cascadeEnd(of: category), end != category, let cascade = pending.first(where: { $0.category == end }) else {
            return
        }
        let hidden = try LocationStore.hidePending(
            connection, userID: userID, shownIn: end, stamp: cascade.stamp, placedIn: graph.dependents(of: category))
        try queueCleanup(connection, userID: userID, of: hidden, shownIn: end)
    }

    /// Settles `category`'s own pending cascade whole, if it has one, in the transaction of a write
    /// that brings its locations back or reassigns them (`LocationStore.follow` then moves the
    /// tombstones this leaves, at the write's stamp): every location still shown in it is hidden at
    /// the cascade's stamp, its clean-up queued, and the cascade leaves the list. Runs under the
    /// user's write lock. Its work grows with the locations still shown in `category`, as the
    /// follow-up's does.
    func settleWhole(_ connection: PostgresConnection, userID: String, category: UUID) throws {
        guard let cascade = try CategoryStore.pendingCascades(connection, userID: userID).first(where: { $0.category == category }) else {
            return
        }
        let hidden = try LocationStore.hidePending(connection, userID: userID, shownIn: category, stamp: cascade.stamp, placedIn: nil)
        try queueCleanup(connection, userID: userID, of: hidden, shownIn: category)
        _ = try UserStore.removeCascade(connection, userID: userID, category: category)
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
