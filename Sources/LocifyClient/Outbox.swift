import Foundation

/// A local change waiting for the server, stamped with the device time the user made it.
public struct OutboxEntry: Codable, Sendable, Hashable, Identifiable {
    /// Increasing: the order the changes were made.
    public var id: Int64
    /// The change to push, as the server will receive it.
    public var change: PushChange
    /// For a category delete: the local locations it removed (cascade) or moved (reassign), as
    /// they were. Restored when the server keeps the category (a newer edit elsewhere won).
    public var displaced: [Location]

    /// Entry `id` (from ``LocalSnapshot/nextOutboxID``) for `change`; `displaced` as for the property.
    public init(id: Int64, change: PushChange, displaced: [Location] = []) {
        self.id = id
        self.change = change
        self.displaced = displaced
    }

    /// The record the change is about.
    var key: RecordKey { RecordKey(kind: change.kind, id: change.recordID) }

    /// For a category delete, where its locations go (nil: deleted with it).
    var reassignTarget: UUID? {
        if case .deleteCategory(let write) = change { return write.reassignCategoryID }
        return nil
    }

    var isCategoryDelete: Bool {
        if case .deleteCategory = change { return true }
        return false
    }
}

/// A record's identity across kinds.
struct RecordKey: Hashable, Sendable {
    var kind: RecordKind
    var id: UUID
}

/// The outbox's rules, as pure functions.
enum Outbox {
    /// Adds `change` to `outbox`, folding it into earlier changes of the same record that are not
    /// in flight: a write replaces earlier writes and location deletes (a create stays a create,
    /// so the server inserts a record it may never have seen); a delete replaces earlier writes.
    /// A category delete is never folded away: the server must run its cascade or reassign.
    /// Returns the ids of the entries to drop and the entry to append.
    static func enqueue(
        _ change: PushChange, displaced: [Location] = [], into outbox: [OutboxEntry], inFlight: Set<Int64>, nextID: Int64
    ) -> (removed: [Int64], entry: OutboxEntry) {
        var change = change
        let key = RecordKey(kind: change.kind, id: change.recordID)
        var removed: [Int64] = []
        var replacedCreate = false
        for entry in outbox where entry.key == key && !inFlight.contains(entry.id) && !entry.isCategoryDelete {
            removed.append(entry.id)
            if entry.change.action == .create { replacedCreate = true }
        }
        if replacedCreate {
            switch change {
            case .updateCategory(let write): change = .createCategory(write)
            case .updateLocation(let write): change = .createLocation(write)
            default: break
            }
        }
        return (removed, OutboxEntry(id: nextID, change: change, displaced: displaced))
    }

    /// The next batch to push: outbox entries in the order made, at most `limit`, none in
    /// flight, one per record, and nothing but category deletes after a category delete (the
    /// server applies category deletes last, so a later change must not overtake one). Returned
    /// in the order the server applies them: category writes, location changes, category deletes.
    static func nextBatch(_ outbox: [OutboxEntry], limit: Int, inFlight: Set<Int64> = []) -> [OutboxEntry] {
        var batch: [OutboxEntry] = []
        var keys = Set<RecordKey>()
        var afterCategoryDelete = false
        for entry in outbox.sorted(by: { $0.id < $1.id }) where !inFlight.contains(entry.id) {
            if batch.count >= limit || keys.contains(entry.key) { break }
            if afterCategoryDelete && !entry.isCategoryDelete { break }
            batch.append(entry)
            keys.insert(entry.key)
            if entry.isCategoryDelete { afterCategoryDelete = true }
        }
        return contractOrder(batch)
    }

    /// Stable sort into the order the server applies a batch (openapi.yaml).
    static func contractOrder(_ entries: [OutboxEntry]) -> [OutboxEntry] {
        entries.enumerated()
            .sorted { ($0.element.change.applicationGroup, $0.offset) < ($1.element.change.applicationGroup, $1.offset) }
            .map(\.element)
    }
}

/// The server's last-write-wins rule (openapi.yaml and 11), used by the client to tell whether a
/// pending local change will win over a server state it has just learnt about.
public enum LastWriteWins: Sendable {
    /// What the pending change does.
    public enum Intent: Sendable, Hashable {
        case create, replace, delete
    }

    /// The server's verdict.
    public enum Decision: Sendable, Hashable {
        /// The change is newer: the server stores it.
        case wins
        /// Same time, same content (or a delete of a tombstone): nothing changes.
        case replay
        /// The server's record is newer (or differs at the same time): E008.
        case loses
    }

    /// Decides a change stamped `requested` (milliseconds) against the server's record stamped
    /// `stored` (its `updated_at`, or `deleted_at` when `storedIsDeleted`).
    public static func decide(
        _ intent: Intent, requested: Int64, stored: Int64, storedIsDeleted: Bool, sameContent: Bool
    ) -> Decision {
        if intent == .delete {
            if storedIsDeleted { return .replay }
            return requested < stored ? .loses : .wins
        }
        if storedIsDeleted { return requested > stored ? .wins : .loses }
        if requested < stored { return .loses }
        if requested == stored { return sameContent ? .replay : .loses }
        return .wins
    }

    /// Decides `change` against the server's `state`.
    static func decide(_ change: PushChange, against state: RecordState) -> Decision {
        let requested = (change.updatedAt ?? .distantFuture).locifyMilliseconds
        let stored = state.updatedAt.locifyMilliseconds
        var isDeleted = false
        if case .tombstone = state { isDeleted = true }
        let intent: Intent
        var sameContent = false
        switch (change, state) {
        case (.deleteCategory, _), (.deleteLocation, _):
            intent = .delete
        case (.createCategory(let write), .category(let category)), (.updateCategory(let write), .category(let category)):
            intent = change.action == .create ? .create : .replace
            sameContent = write.normalized == category.content.normalized
        case (.createLocation(let write), .location(let location)), (.updateLocation(let write), .location(let location)):
            intent = change.action == .create ? .create : .replace
            sameContent = write.normalized == location.content.normalized
        default:
            intent = change.action == .create ? .create : .replace
        }
        return decide(intent, requested: requested, stored: stored, storedIsDeleted: isDeleted, sameContent: sameContent)
    }
}

extension CategoryWrite {
    /// As the server compares it: trimmed name, time dropped (compared apart).
    var normalized: CategoryWrite {
        CategoryWrite(id: id, name: name.trimmingCharacters(in: .whitespacesAndNewlines), icon: icon, updatedAt: nil)
    }
}

extension LocationWrite {
    /// As the server compares it: trimmed name, blank address and description as nil.
    var normalized: LocationWrite {
        func blankAsNil(_ text: String?) -> String? {
            guard let text, !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else { return nil }
            return text
        }
        return LocationWrite(
            id: id, categoryID: categoryID, name: name.trimmingCharacters(in: .whitespacesAndNewlines),
            address: blankAsNil(address), description: blankAsNil(description), latitude: latitude,
            longitude: longitude, isFavorite: isFavorite, imageURLs: imageURLs, updatedAt: nil)
    }
}
