import Foundation

/// Where a ``SyncEngine`` keeps the device's copy of the user's data: one row per record, the
/// outbox, the change feed's cursor and the user the copy belongs to.
///
/// The engine reads records one at a time or by query (it never loads the whole copy) and writes
/// each change set with one ``commit(_:)``, which must be atomic: all of it or none, so a crash
/// between two commits leaves the last committed state. Methods are synchronous and quick (an
/// indexed read, one small transaction); they are called from the engine's actor.
/// ``SQLiteStore`` is the store for an app; ``InMemoryStore`` is for tests and previews.
/// Both are ``ObservableLocalStore``s, whose query results can be watched (``LiveQuery``).
public protocol LocalStore: Sendable {
    /// The cursor, the next outbox id and the user of the copy.
    func metadata() throws -> StoreMetadata
    /// One live category (``Category/locationCount`` as the server last sent it; ``categories()``
    /// counts the local locations).
    func category(id: UUID) throws -> Category?
    /// One live location.
    func location(id: UUID) throws -> Location?
    /// Every live category, by name (case-insensitive) then id, with counts.
    func categories() throws -> [Category]
    /// The live locations `query` selects, in its order.
    func locations(_ query: LocalQuery) throws -> [Location]
    /// How many live locations `query` selects, whatever its page.
    func locationCount(_ query: LocalQuery) throws -> Int
    /// The ids of the live locations of category `id`.
    func locationIDs(inCategory id: UUID) throws -> [UUID]
    /// When each field of record `id` was last written (issue 36: the field clock last write wins
    /// merges by), in milliseconds, in `CategoryField` or `LocationField` order; nil when the
    /// store has none for it (every field then counts as written at the record's `updatedAt`).
    func fieldStamps(of kind: RecordKind, id: UUID) throws -> [Int64]?
    /// Every pending outbox entry, in the order made.
    func outbox() throws -> [OutboxEntry]
    /// The changes the server refused that the app has not retried or discarded, in the order made.
    func refusedChanges() throws -> [RefusedChange]
    /// Applies `changes` atomically.
    func commit(_ changes: LocalChanges) throws
    /// Removes everything: records, outbox, refused changes, cursor and user.
    func erase() throws
    /// Called with `true` before a first sync fills an empty store and with `false` after it,
    /// also when it fails: a store may then build its secondary indexes once, at the end, instead
    /// of row by row. Reads stay correct meanwhile.
    func bulkLoad(_ active: Bool) throws
}

extension LocalStore {
    /// Counts what ``locations(_:)`` returns without the page.
    public func locationCount(_ query: LocalQuery) throws -> Int { try locations(query.unpaged).count }

    /// Nothing to do for a store without secondary indexes.
    public func bulkLoad(_ active: Bool) throws {}

    /// No field stamps: every field of a record counts as written at its `updatedAt`.
    public func fieldStamps(of kind: RecordKind, id: UUID) throws -> [Int64]? { nil }
}

/// What a store keeps beside the records.
public struct StoreMetadata: Sendable, Hashable {
    /// The change feed's cursor; nil before the first pull (or after a resync began).
    public var cursor: String?
    /// The id the next outbox entry gets.
    public var nextOutboxID: Int64
    /// The user (the token's `sub`) whose copy this is; nil until the first sync binds it.
    public var userID: String?
    /// When a pull last reached the end of the feed (``SyncStatus/lastSyncedAt``).
    public var lastSyncedAt: Date?
    /// The photos taken offline that wait for their upload, in the order taken (ImageUploads.swift).
    public var pendingImages: [PendingImage]
    /// How far the server's clock is ahead of the device's, in milliseconds, as last learnt
    /// (``SyncEngine/serverClockOffset``); nil before the first sync answer.
    public var serverClockOffset: Int64?

    /// Metadata with these values (the default is a new store's).
    public init(
        cursor: String? = nil, nextOutboxID: Int64 = 1, userID: String? = nil, lastSyncedAt: Date? = nil,
        pendingImages: [PendingImage] = [], serverClockOffset: Int64? = nil
    ) {
        self.cursor = cursor
        self.nextOutboxID = nextOutboxID
        self.userID = userID
        self.lastSyncedAt = lastSyncedAt
        self.pendingImages = pendingImages
        self.serverClockOffset = serverClockOffset
    }
}

/// One atomic change of a store. Applied in this order: `resetRecords`, record removals, record
/// upserts, outbox removals, outbox writes, refused changes, metadata.
public struct LocalChanges: Sendable, Hashable {
    /// When set, every record not named in it is removed first (the start of a snapshot pull).
    public var resetRecords: RecordReset?
    /// Categories to insert or replace, by id.
    public var upsertedCategories: [Category] = []
    /// Categories to remove (absent ids are ignored).
    public var removedCategoryIDs: [UUID] = []
    /// Locations to insert or replace, by id.
    public var upsertedLocations: [Location] = []
    /// Locations to remove (absent ids are ignored).
    public var removedLocationIDs: [UUID] = []
    /// The field stamps (``LocalStore/fieldStamps(of:id:)``) of the categories upserted, by id;
    /// one upserted without an entry has none.
    public var categoryFieldStamps: [UUID: [Int64]] = [:]
    /// The field stamps of the locations upserted, by id.
    public var locationFieldStamps: [UUID: [Int64]] = [:]
    /// New outbox entries, or new versions of existing ones (same id).
    public var upsertedOutbox: [OutboxEntry] = []
    /// Outbox entries to drop: acknowledged by the server or folded into a later change.
    public var removedOutboxIDs: [Int64] = []
    /// A new cursor (`.init(value: nil)` forgets it), or nil to keep it.
    public var cursor: CursorChange?
    /// A new value for ``StoreMetadata/nextOutboxID`` (it never decreases), or nil to keep it.
    public var nextOutboxID: Int64?
    /// The user the copy now belongs to, or nil to keep it.
    public var userID: String?
    /// Refused changes to keep, new or replaced (same id).
    public var upsertedRefusals: [RefusedChange] = []
    /// Refused changes to drop (retried or discarded).
    public var removedRefusalIDs: [Int64] = []
    /// A new ``StoreMetadata/lastSyncedAt``, or nil to keep it.
    public var lastSyncedAt: Date?
    /// The new queue of photos to upload (``StoreMetadata/pendingImages``), or nil to keep it.
    public var pendingImages: [PendingImage]?
    /// A new ``StoreMetadata/serverClockOffset``, or nil to keep it.
    public var serverClockOffset: Int64?

    /// The records a reset keeps (those with pending changes).
    public struct RecordReset: Sendable, Hashable {
        /// Categories kept.
        public var keptCategoryIDs: Set<UUID>
        /// Locations kept.
        public var keptLocationIDs: Set<UUID>
    }

    /// A cursor to store (nil: none, start from a snapshot).
    public struct CursorChange: Sendable, Hashable {
        /// The cursor to store; nil forgets it, so the next pull starts from a snapshot.
        public var value: String?
        /// A change to cursor `value` (nil: forget the cursor).
        public init(value: String?) { self.value = value }
    }

    /// An empty change set, to fill field by field.
    public init() {}

    /// Whether the change set changes nothing (no commit is needed).
    public var isEmpty: Bool { self == LocalChanges() }
}

/// The device's whole sync state as one value: what ``InMemoryStore`` holds, and what
/// ``SyncEngine/localSnapshot()`` reads out (for tests and debugging; an app queries instead).
public struct LocalSnapshot: Sendable, Hashable {
    /// The live categories, by id (unsynced local ones included).
    public var categories: [UUID: Category]
    /// The live locations, by id.
    public var locations: [UUID: Location]
    /// Local changes not yet acknowledged by the server, in the order they were made.
    public var outbox: [OutboxEntry]
    /// The changes the server refused, kept for the app, in the order made.
    public var refused: [RefusedChange]
    /// The cursor, next outbox id and user.
    public var metadata: StoreMetadata

    /// The change feed's cursor.
    public var cursor: String? { metadata.cursor }

    /// A snapshot with these parts; the default is the empty state of a first launch.
    public init(
        categories: [UUID: Category] = [:], locations: [UUID: Location] = [:], outbox: [OutboxEntry] = [],
        refused: [RefusedChange] = [], metadata: StoreMetadata = StoreMetadata()
    ) {
        self.categories = categories
        self.locations = locations
        self.outbox = outbox
        self.refused = refused
        self.metadata = metadata
    }

    /// Applies one change set (what ``LocalStore/commit(_:)`` makes durable).
    public mutating func apply(_ changes: LocalChanges) {
        if let reset = changes.resetRecords {
            categories = categories.filter { reset.keptCategoryIDs.contains($0.key) }
            locations = locations.filter { reset.keptLocationIDs.contains($0.key) }
        }
        for id in changes.removedCategoryIDs { categories[id] = nil }
        for id in changes.removedLocationIDs { locations[id] = nil }
        for category in changes.upsertedCategories { categories[category.id] = category }
        for location in changes.upsertedLocations { locations[location.id] = location }
        if !changes.removedOutboxIDs.isEmpty || !changes.upsertedOutbox.isEmpty {
            var byID = Dictionary(outbox.map { ($0.id, $0) }, uniquingKeysWith: { _, last in last })
            for id in changes.removedOutboxIDs { byID[id] = nil }
            for entry in changes.upsertedOutbox { byID[entry.id] = entry }
            outbox = byID.values.sorted { $0.id < $1.id }
        }
        if let cursor = changes.cursor { metadata.cursor = cursor.value }
        if let next = changes.nextOutboxID { metadata.nextOutboxID = max(metadata.nextOutboxID, next) }
        if let userID = changes.userID { metadata.userID = userID }
        if let time = changes.lastSyncedAt { metadata.lastSyncedAt = time }
        if let images = changes.pendingImages { metadata.pendingImages = images }
        if let offset = changes.serverClockOffset { metadata.serverClockOffset = offset }
        if !changes.removedRefusalIDs.isEmpty || !changes.upsertedRefusals.isEmpty {
            let removed = Set(changes.removedRefusalIDs).union(changes.upsertedRefusals.map(\.id))
            refused = (refused.filter { !removed.contains($0.id) } + changes.upsertedRefusals).sorted { $0.id < $1.id }
        }
    }
}

/// Keeps everything in memory: for tests, previews, and apps that persist elsewhere.
public final class InMemoryStore: LocalStore, @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSLock()
    private var snapshot: LocalSnapshot
    /// When set, the next commits fail with it (for tests of store failures).
    private var failure: (any Error)?
    /// The live queries to tell of each commit (LocalQueries.swift).
    let observers = StoreObservers()
    /// The records' field stamps, by kind and id (guarded by `lock`).
    private var stamps: [RecordKind: [UUID: [Int64]]] = [:]

    /// A store starting from `snapshot` (empty by default).
    public init(_ snapshot: LocalSnapshot = LocalSnapshot()) {
        self.snapshot = snapshot
    }

    private func locked<Result>(_ body: (inout LocalSnapshot) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&snapshot)
    }

    /// The whole state held.
    public var contents: LocalSnapshot { locked { $0 } }

    /// Makes every following commit fail with `error` (nil: succeed again).
    public func failCommits(with error: (any Error)?) {
        lock.lock()
        failure = error
        lock.unlock()
    }

    /// The cursor, next outbox id and user.
    public func metadata() throws -> StoreMetadata { locked { $0.metadata } }

    /// One live category.
    public func category(id: UUID) throws -> Category? {
        locked { $0.categories[id] }
    }

    /// One live location.
    public func location(id: UUID) throws -> Location? { locked { $0.locations[id] } }

    /// Every live category, by name then id, counted.
    public func categories() throws -> [Category] {
        locked { snapshot in
            var counts: [UUID: Int] = [:]
            for location in snapshot.locations.values { counts[location.categoryID, default: 0] += 1 }
            return snapshot.categories.values.map { category in
                var category = category
                category.locationCount = counts[category.id] ?? 0
                return category
            }
            .sorted(by: LocalQuery.precedes)
        }
    }

    /// The live locations `query` selects, in its order.
    public func locations(_ query: LocalQuery) throws -> [Location] {
        let sorted = locked { $0.locations.values.filter(query.matches) }.sorted(by: query.precedes)
        let page = sorted.dropFirst(query.offset)
        return Array(query.limit.map { page.prefix($0) } ?? page)
    }

    /// The ids of the live locations of category `id`.
    public func locationIDs(inCategory id: UUID) throws -> [UUID] {
        locked { $0.locations.values.filter { $0.categoryID == id }.map(\.id) }
    }

    /// The field stamps of record `id`, as last upserted.
    public func fieldStamps(of kind: RecordKind, id: UUID) throws -> [Int64]? {
        lock.lock()
        defer { lock.unlock() }
        return stamps[kind]?[id]
    }

    /// The pending outbox entries, in the order made.
    public func outbox() throws -> [OutboxEntry] { locked { $0.outbox } }

    /// The refused changes kept, in the order made.
    public func refusedChanges() throws -> [RefusedChange] { locked { $0.refused } }

    /// Applies `changes` atomically (or throws what ``failCommits(with:)`` set).
    public func commit(_ changes: LocalChanges) throws {
        try locked { snapshot in
            if let failure { throw failure }
            snapshot.apply(changes)
            for (kind, upserted, written) in [
                (RecordKind.category, changes.upsertedCategories.map(\.id), changes.categoryFieldStamps),
                (.location, changes.upsertedLocations.map(\.id), changes.locationFieldStamps),
            ] {
                for id in upserted { stamps[kind, default: [:]][id] = written[id] }
            }
            if changes.resetRecords != nil || !changes.removedCategoryIDs.isEmpty || !changes.removedLocationIDs.isEmpty {
                stamps[.category] = stamps[.category]?.filter { snapshot.categories[$0.key] != nil }
                stamps[.location] = stamps[.location]?.filter { snapshot.locations[$0.key] != nil }
            }
        }
        observers.notify()
    }

    /// Removes everything.
    public func erase() throws {
        locked {
            $0 = LocalSnapshot()
            stamps = [:]
        }
        observers.notify()
    }
}
