import Foundation
import LocifyRules

/// One change set in the making: reads see the store with this transaction's edits on top, edits
/// are recorded, and ``changes`` is what one ``LocalStore/commit(_:)`` makes durable. Only the
/// records touched are held, so an edit costs the same with ten records or a hundred thousand.
/// Holds the rules for taking in what the server says.
struct StoreTransaction {
    let store: any LocalStore
    private(set) var outbox: OutboxState
    private(set) var metadata: StoreMetadata
    /// Records written (a value) or removed (nil) by this transaction.
    private var categoryEdits: [UUID: Category?] = [:]
    private var locationEdits: [UUID: Location?] = [:]
    /// The field clocks of the records written (issue 36).
    private var categoryClocks: [UUID: CategoryClock] = [:]
    private var locationClocks: [UUID: LocationClock] = [:]
    private var reset: LocalChanges.RecordReset?
    private var cursor: LocalChanges.CursorChange?
    private var boundUser: String?
    private(set) var refused: [Int64: RefusedChange]
    private var refusalsWritten: Set<Int64> = []
    private var refusalsRemoved: Set<Int64> = []
    private var syncedAt: Date?
    /// The upload queue's new contents, when this transaction changed it.
    private var pendingImages: [PendingImage]?
    private var clockOffset: Int64?
    /// Events to report once the transaction is committed.
    var events: [SyncEvent] = []

    init(store: any LocalStore, state: EngineState) {
        self.store = store
        self.outbox = state.outbox
        self.metadata = state.metadata
        self.refused = state.refused
    }

    /// The engine's state once this transaction is committed.
    var state: EngineState { EngineState(outbox: outbox, metadata: metadata, refused: refused) }

    /// The change set to commit; the outbox's own record of changes is emptied into it.
    mutating func takeChanges() -> LocalChanges {
        var changes = LocalChanges()
        changes.resetRecords = reset
        for (id, category) in categoryEdits {
            if let category {
                changes.upsertedCategories.append(category)
                changes.categoryFieldStamps[id] = categoryClocks[id]?.milliseconds
            } else {
                changes.removedCategoryIDs.append(id)
            }
        }
        for (id, location) in locationEdits {
            if let location {
                changes.upsertedLocations.append(location)
                changes.locationFieldStamps[id] = locationClocks[id]?.milliseconds
            } else {
                changes.removedLocationIDs.append(id)
            }
        }
        let (written, removed) = outbox.takeChanges()
        changes.upsertedOutbox = written
        changes.removedOutboxIDs = removed
        changes.cursor = cursor
        if metadata.nextOutboxID != outbox.nextID {
            metadata.nextOutboxID = outbox.nextID
            changes.nextOutboxID = outbox.nextID
        }
        changes.userID = boundUser
        changes.upsertedRefusals = refusalsWritten.sorted().compactMap { refused[$0] }
        changes.removedRefusalIDs = refusalsRemoved.sorted()
        changes.lastSyncedAt = syncedAt
        changes.pendingImages = pendingImages
        pendingImages = nil
        changes.serverClockOffset = clockOffset
        refusalsWritten = []
        refusalsRemoved = []
        return changes
    }

    // MARK: Reads

    func category(_ id: UUID) throws -> Category? {
        if let edit = categoryEdits[id] { return edit }
        if let reset, !reset.keptCategoryIDs.contains(id) { return nil }
        return try store.category(id: id)
    }

    func location(_ id: UUID) throws -> Location? {
        if let edit = locationEdits[id] { return edit }
        if let reset, !reset.keptLocationIDs.contains(id) { return nil }
        return try store.location(id: id)
    }

    /// The field clock of `category` as stored (this transaction's, the store's, or every field at
    /// its `updatedAt`).
    func clock(of category: Category) throws -> CategoryClock {
        if let clock = categoryClocks[category.id], categoryEdits[category.id] != nil { return clock }
        return category.clock(stored: try store.fieldStamps(of: .category, id: category.id))
    }

    /// The field clock of `location` as stored.
    func clock(of location: Location) throws -> LocationClock {
        if let clock = locationClocks[location.id], locationEdits[location.id] != nil { return clock }
        return location.clock(stored: try store.fieldStamps(of: .location, id: location.id))
    }

    /// The live locations of category `id`, this transaction's edits included.
    func locationIDs(inCategory id: UUID) throws -> [UUID] {
        var ids = Set(try store.locationIDs(inCategory: id))
        if let reset { ids.formIntersection(reset.keptLocationIDs) }
        for (locationID, edit) in locationEdits {
            if edit?.categoryID == id { ids.insert(locationID) } else { ids.remove(locationID) }
        }
        return ids.sorted { $0.uuidString < $1.uuidString }
    }

    // MARK: Primitive edits

    mutating func upsert(_ category: Category, clock: CategoryClock) {
        categoryEdits[category.id] = .some(category)
        categoryClocks[category.id] = clock
    }

    mutating func removeCategory(_ id: UUID) { categoryEdits[id] = .some(nil) }

    mutating func upsert(_ location: Location, clock: LocationClock) {
        locationEdits[location.id] = .some(location)
        locationClocks[location.id] = clock
    }

    mutating func removeLocation(_ id: UUID) { locationEdits[id] = .some(nil) }

    mutating func setCursor(_ value: String?) {
        metadata.cursor = value
        cursor = .init(value: value)
    }

    mutating func bind(user: String) {
        metadata.userID = user
        boundUser = user
    }

    /// The copy reached the end of the feed at `time`.
    mutating func markSynced(at time: Date) {
        let stored = Date(locifyMilliseconds: time.locifyMilliseconds)  // as the store keeps it
        metadata.lastSyncedAt = stored
        syncedAt = stored
    }

    /// Remembers the server clock's offset (``ServerClockOffset``) across launches.
    mutating func setServerClockOffset(_ milliseconds: Int64) {
        metadata.serverClockOffset = milliseconds
        clockOffset = milliseconds
    }

    /// Keeps a change the server refused, for the app to retry or discard.
    mutating func refuse(_ change: RefusedChange) {
        refused[change.id] = change
        refusalsWritten.insert(change.id)
        refusalsRemoved.remove(change.id)
    }

    /// Drops a refused change (retried or discarded).
    mutating func resolveRefusal(_ id: Int64) {
        guard refused.removeValue(forKey: id) != nil else { return }
        refusalsWritten.remove(id)
        refusalsRemoved.insert(id)
    }

    /// Queues `change`, its photos still to upload in the upload queue (ImageUploads.swift).
    mutating func enqueue(_ change: PushChange, serverMayKnow: Bool, inFlight: Set<Int64>) {
        outbox.enqueue(queuingLocalImages(of: change), serverMayKnow: serverMayKnow, inFlight: inFlight)
    }

    /// Replaces the queue of photos waiting for their upload.
    mutating func setPendingImages(_ images: [PendingImage]) {
        metadata.pendingImages = images
        pendingImages = images
    }

    mutating func removeOutbox(_ id: Int64) { outbox.remove(id) }
    /// After the server refused or lost the record's create, its next pending write becomes a
    /// create of the record as the device holds it, so it does not fail as an edit of nothing.
    mutating func promoteToCreate(_ key: RecordKey) throws {
        let category = key.kind == .category ? try self.category(key.id) : nil
        let location = key.kind == .location ? try self.location(key.id) : nil
        outbox.promoteToCreate(
            key,
            wholeRecord: { at in
                if let category { return .createCategory(CategoryWrite(category, at: at)) }
                if let location { return PushChange.createLocation(LocationWrite(location, at: at)).withoutLocalImages }
                return nil
            })
    }
    mutating func putOutbox(_ entry: OutboxEntry) { outbox.put(entry) }

    /// Removes every record without a pending change, but those of `seen`: the start of a
    /// resync (nothing seen yet), or the end of a first pull (what its snapshot held).
    mutating func forgetSyncedRecords(except seen: Set<RecordKey> = []) {
        var kept = LocalChanges.RecordReset(keptCategoryIDs: [], keptLocationIDs: [])
        for key in seen.union(outbox.ordered.map(\.key)) {
            switch key.kind {
            case .category: kept.keptCategoryIDs.insert(key.id)
            case .location: kept.keptLocationIDs.insert(key.id)
            }
        }
        categoryEdits = categoryEdits.filter { kept.keptCategoryIDs.contains($0.key) }
        locationEdits = locationEdits.filter { kept.keptLocationIDs.contains($0.key) }
        reset = kept
    }

    // MARK: Taking in the server's state

    /// Takes in the server's current state of a record (a push result, the feed, a read), with
    /// the field clock `fieldUpdatedAt` the feed sends (without it, every field at the record's
    /// `updated_at`). The device shows it with the record's pending writes decided on top, field by
    /// field, by the server's rule (issue 36): a pending rename survives a pulled favourite and
    /// the other way round. A record with a pending delete, or deleted on the server while a write
    /// of it is pending, keeps its local copy until the push settles it. A location in a category
    /// this device is deleting is shown as its pending deletes will leave it (removed, or moved,
    /// again if the category it moves to is deleted after).
    mutating func adopt(_ state: RecordState, fieldUpdatedAt: [String: Date]? = nil) throws {
        let key = RecordKey(kind: state.kind, id: state.id)
        let pending = outbox.entries(of: key)
        if pending.contains(where: \.isDelete) { return }
        switch state {
        case .category(var category):
            var clock = category.clock(fieldUpdatedAt: fieldUpdatedAt)
            for entry in pending { category.decide(entry.change, clock: &clock) }
            upsert(category, clock: clock)
        case .tombstone(let kind, let tombstone):
            if !pending.isEmpty { return }
            if kind == .category { removeCategory(tombstone.id) } else { removeLocation(tombstone.id) }
        case .location(var location):
            var clock = location.clock(fieldUpdatedAt: fieldUpdatedAt)
            for entry in pending { location.decide(entry.change, clock: &clock) }
            // Along the chain of pending deletes: a place moved to a category deleted after is
            // moved or removed by that delete too.
            var delete = outbox.pendingDelete(ofCategory: location.categoryID)
            while let current = delete {
                guard let target = current.reassignTarget, let at = current.change.updatedAt else {
                    removeLocation(location.id)
                    return
                }
                location = location.moved(to: target, at: at)
                clock = clock.stamping(.categoryID, at: at.timestamp)
                delete = outbox.entries(of: RecordKey(kind: .category, id: target)).first { $0.isCategoryDelete && $0.id > current.id }
            }
            upsert(try keepingPendingImages(location), clock: clock)
        }
    }

    /// Takes in that the server has no record `key` at all (E007 on a read).
    mutating func adoptAbsence(_ key: RecordKey) {
        if outbox.hasPending(key) { return }
        switch key.kind {
        case .category: removeCategory(key.id)
        case .location: removeLocation(key.id)
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

/// What the engine holds of its store's committed state: the outbox, the metadata and the refused
/// changes (the records are read from the store as needed).
struct EngineState {
    var outbox: OutboxState
    var metadata: StoreMetadata
    var refused: [Int64: RefusedChange]
}
