import Foundation

/// A working copy of the snapshot that records what changed, so that one ``LocalChanges`` can be
/// committed atomically. Holds the rules for taking in what the server says.
struct StoreTransaction: Sendable {
    private(set) var snapshot: LocalSnapshot
    private(set) var changes = LocalChanges()
    /// Events to report once the transaction is committed.
    var events: [SyncEvent] = []

    init(_ snapshot: LocalSnapshot) {
        self.snapshot = snapshot
    }

    // MARK: Primitive edits

    mutating func upsert(_ category: Category) {
        snapshot.categories[category.id] = category
        changes.removedCategoryIDs.removeAll { $0 == category.id }
        changes.upsertedCategories.removeAll { $0.id == category.id }
        changes.upsertedCategories.append(category)
    }

    mutating func removeCategory(_ id: UUID) {
        snapshot.categories[id] = nil
        changes.upsertedCategories.removeAll { $0.id == id }
        if !changes.removedCategoryIDs.contains(id) { changes.removedCategoryIDs.append(id) }
    }

    mutating func upsert(_ location: Location) {
        snapshot.locations[location.id] = location
        changes.removedLocationIDs.removeAll { $0 == location.id }
        changes.upsertedLocations.removeAll { $0.id == location.id }
        changes.upsertedLocations.append(location)
    }

    mutating func removeLocation(_ id: UUID) {
        snapshot.locations[id] = nil
        changes.upsertedLocations.removeAll { $0.id == id }
        if !changes.removedLocationIDs.contains(id) { changes.removedLocationIDs.append(id) }
    }

    mutating func putOutbox(_ entry: OutboxEntry) {
        if let index = snapshot.outbox.firstIndex(where: { $0.id == entry.id }) {
            snapshot.outbox[index] = entry
        } else {
            snapshot.outbox.append(entry)
            snapshot.outbox.sort { $0.id < $1.id }
        }
        changes.upsertedOutbox.removeAll { $0.id == entry.id }
        changes.upsertedOutbox.append(entry)
    }

    mutating func removeOutbox(_ id: Int64) {
        snapshot.outbox.removeAll { $0.id == id }
        changes.upsertedOutbox.removeAll { $0.id == id }
        if !changes.removedOutboxIDs.contains(id) { changes.removedOutboxIDs.append(id) }
    }

    mutating func setCursor(_ cursor: String?) {
        snapshot.cursor = cursor
        changes.cursor = .init(value: cursor)
    }

    /// Appends `change` to the outbox, folded into earlier changes of the same record.
    mutating func enqueue(_ change: PushChange, displaced: [Location] = [], inFlight: Set<Int64>) {
        let (removed, entry) = Outbox.enqueue(
            change, displaced: displaced, into: snapshot.outbox, inFlight: inFlight, nextID: snapshot.nextOutboxID)
        for id in removed { removeOutbox(id) }
        putOutbox(entry)
        snapshot.nextOutboxID = entry.id + 1
        changes.nextOutboxID = snapshot.nextOutboxID
    }

    // MARK: Taking in the server's state

    /// The pending (unacknowledged) changes of a record.
    func pending(_ key: RecordKey) -> [OutboxEntry] {
        snapshot.outbox.filter { $0.key == key }
    }

    /// The pending category delete whose local cascade or reassign removed or moved `locationID`
    /// (or that deleted the category `categoryID`).
    func pendingCategoryDelete(displacing locationID: UUID? = nil, category categoryID: UUID? = nil) -> OutboxEntry? {
        snapshot.outbox.last { entry in
            guard entry.isCategoryDelete else { return false }
            if let categoryID, entry.change.recordID == categoryID { return true }
            if let locationID, entry.displaced.contains(where: { $0.id == locationID }) { return true }
            return false
        }
    }

    /// Takes in the server's current state of a record (from a push result, E008, the feed or a
    /// read). Pending local changes of the record keep the local copy unless last write wins
    /// says they lose to `state`, in which case they are dropped (a lost category delete gives
    /// back what it removed). Locations under a pending category delete update what that delete
    /// would give back instead of reappearing.
    mutating func adopt(_ state: RecordState, inFlight: Set<Int64> = []) {
        let key = RecordKey(kind: state.kind, id: state.id)
        let pending = pending(key)
        if !pending.isEmpty {
            let losing = pending.filter { LastWriteWins.decide($0.change, against: state) == .loses }
            guard losing.count == pending.count, !pending.contains(where: { inFlight.contains($0.id) }) else { return }
            for entry in pending {
                removeOutbox(entry.id)
                if entry.isCategoryDelete { restore(entry) }
            }
        }
        switch state {
        case .category(let category):
            upsert(category)
        case .tombstone(.category, let tombstone):
            removeCategory(tombstone.id)
        case .location(let location):
            takeLocation(location)
        case .tombstone(.location, let tombstone):
            forgetDisplaced(tombstone.id)
            removeLocation(tombstone.id)
        }
    }

    /// Stores a server location, or, when a pending category delete covers it, records it in
    /// that delete's stash (and shows it moved, for a reassign).
    private mutating func takeLocation(_ location: Location) {
        forgetDisplaced(location.id)
        guard var entry = pendingCategoryDelete(category: location.categoryID) else {
            upsert(location)
            return
        }
        entry.displaced.append(location)
        putOutbox(entry)
        if let target = entry.reassignTarget, let at = entry.change.updatedAt {
            upsert(location.moved(to: target, at: at))
        } else {
            removeLocation(location.id)
        }
    }

    /// Drops a location from every pending category delete's stash.
    mutating func forgetDisplaced(_ locationID: UUID) {
        for var entry in snapshot.outbox where entry.isCategoryDelete && entry.displaced.contains(where: { $0.id == locationID }) {
            entry.displaced.removeAll { $0.id == locationID }
            putOutbox(entry)
        }
    }

    /// Gives back what a category delete that did not happen on the server removed or moved
    /// locally: the stash holds each location's latest local state (edits made before the delete,
    /// and what the feed said since).
    mutating func restore(_ entry: OutboxEntry) {
        for location in entry.displaced { upsert(location) }
        events.append(.restored(categoryID: entry.change.recordID, locationIDs: entry.displaced.map(\.id)))
    }

    /// Removes every record without a pending change (the start of a snapshot pull), and empties
    /// the stashes of pending category deletes (the snapshot fills them again with what the server
    /// has, so a delete that loses never brings back a location deleted meanwhile).
    mutating func forgetSyncedRecords() {
        for var entry in snapshot.outbox where entry.isCategoryDelete && !entry.displaced.isEmpty {
            entry.displaced = []
            putOutbox(entry)
        }
        let pendingKeys = Set(snapshot.outbox.map(\.key))
        for id in snapshot.categories.keys where !pendingKeys.contains(RecordKey(kind: .category, id: id)) {
            removeCategory(id)
        }
        for id in snapshot.locations.keys where !pendingKeys.contains(RecordKey(kind: .location, id: id)) {
            removeLocation(id)
        }
    }
}

extension Location {
    /// This location as a category reassign leaves it: in `target`, stamped no earlier than `at`.
    func moved(to target: UUID, at: Date) -> Location {
        var moved = self
        moved.categoryID = target
        if at.locifyMilliseconds > updatedAt.locifyMilliseconds { moved.updatedAt = at }
        return moved
    }
}
