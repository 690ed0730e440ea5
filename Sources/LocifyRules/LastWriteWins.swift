/// The last-write-wins rule of openapi.yaml, as one pure function.
///
/// Every single-record write (create/upsert, replace, delete) of categories and locations, from
/// the REST endpoints and from sync push alike, is decided here; the repositories only apply the
/// decision inside the transaction that holds the user's write lock. Each record keeps its newest
/// write, so the writes to one record end in the same state whatever order they arrive in
/// (openapi.yaml, "Writes in any order"); a delete wins a tie against any other write.
public enum LastWriteWins {
    /// What the caller wants to do.
    public enum Intent: Sendable, Equatable {
        /// POST: create, or upsert when the id exists.
        case create
        /// PUT: replace an existing record (live or tombstoned).
        case replace
        /// DELETE: leave a tombstone.
        case delete
    }

    /// The stored record's clock: the time of its own last write, which for a tombstone equals
    /// `deleted_at`.
    public struct Stored: Sendable, Equatable {
        /// The stored `updated_at` (the deletion time for a tombstone).
        public var updatedAt: Timestamp
        /// Whether the record's own last write was a delete.
        public var isDeleted: Bool

        /// The clock of a stored record.
        public init(updatedAt: Timestamp, isDeleted: Bool) {
            self.updatedAt = updatedAt
            self.isDeleted = isDeleted
        }
    }

    /// The verdict, with the timestamp an accepted write is stored under.
    public enum Decision: Sendable, Equatable {
        /// No record yet: insert it (201).
        case insert(at: Timestamp)
        /// The write wins over the stored record (or tombstone): store it, version + 1.
        case overwrite(at: Timestamp)
        /// Same time, same content: an idempotent replay; nothing changes.
        case replay
        /// Delete of a record that is already a tombstone, not newer than it: nothing changes (204).
        /// (A newer one is an `overwrite`: the tombstone takes its time.)
        case alreadyDeleted
        /// The write loses: 409 E008 with the stored record.
        case conflict
        /// PUT or DELETE of an id that never existed: E007.
        case notFound
    }

    /// The time a write is stored under: a requested time in the future is clamped to the server's
    /// clock; a write without one is stamped max(now, stored + 1 ms) so it never conflicts.
    public static func stamp(requested: Timestamp?, storedUpdatedAt: Timestamp?, now: Timestamp) -> Timestamp {
        if let requested { return min(requested, now) }
        if let storedUpdatedAt { return max(now, storedUpdatedAt.adding(milliseconds: 1)) }
        return now
    }

    /// Decides one write.
    /// - Parameters:
    ///   - requested: the client's `updated_at`, if it sent one (already truncated to ms).
    ///   - sameContent: whether the write's normalised content equals the stored record's
    ///     (only consulted when the timestamps are equal).
    ///   - now: the server's clock.
    public static func decide(
        _ intent: Intent, stored: Stored?, requested: Timestamp?, sameContent: Bool, now: Timestamp
    ) -> Decision {
        let at = stamp(requested: requested, storedUpdatedAt: stored?.updatedAt, now: now)
        guard let stored else {
            return intent == .create ? .insert(at: at) : .notFound
        }
        if intent == .delete {
            if stored.isDeleted {
                // Deleting a tombstone again: a newer delete moves it to its own time, so a write
                // made between the two deletes loses as it would have in time order; an older,
                // equal or unstamped one changes nothing.
                guard let requested, min(requested, now) > stored.updatedAt else { return .alreadyDeleted }
                return .overwrite(at: at)
            }
            return at < stored.updatedAt ? .conflict : .overwrite(at: at)
        }
        if stored.isDeleted {
            // A write against a tombstone brings the record back only when strictly newer.
            return at > stored.updatedAt ? .overwrite(at: at) : .conflict
        }
        if at < stored.updatedAt { return .conflict }
        if at == stored.updatedAt { return sameContent ? .replay : .conflict }
        return .overwrite(at: at)
    }
}
