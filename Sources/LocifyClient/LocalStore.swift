import Foundation

/// Where a ``SyncEngine`` keeps the device's copy of the user's data, its outbox and its cursor.
/// Two operations: read everything once at start, then commit each change set atomically (all of
/// it or none: a crash between two commits leaves the last committed state). ``InMemoryStore`` and
/// ``FileStore`` ship; an app can implement this on SwiftData or SQLite (one transaction per
/// ``commit(_:)``).
public protocol LocalStore: Sendable {
    /// Everything committed so far (an empty snapshot the first time).
    func load() async throws -> LocalSnapshot
    /// Applies `changes` atomically.
    func commit(_ changes: LocalChanges) async throws
}

/// The device's whole sync state: records, outbox, cursor.
public struct LocalSnapshot: Codable, Sendable, Hashable {
    /// The live categories, by id (unsynced local ones included).
    public var categories: [UUID: Category]
    /// The live locations, by id.
    public var locations: [UUID: Location]
    /// Local changes not yet acknowledged by the server, in the order they were made.
    public var outbox: [OutboxEntry]
    /// The change feed's cursor; nil before the first pull (or after E009).
    public var cursor: String?
    /// The id the next outbox entry gets.
    public var nextOutboxID: Int64

    /// A snapshot with these parts; the default is the empty state of a first launch.
    public init(
        categories: [UUID: Category] = [:], locations: [UUID: Location] = [:], outbox: [OutboxEntry] = [],
        cursor: String? = nil, nextOutboxID: Int64 = 1
    ) {
        self.categories = categories
        self.locations = locations
        self.outbox = outbox
        self.cursor = cursor
        self.nextOutboxID = nextOutboxID
    }

    enum CodingKeys: String, CodingKey {
        case categories, locations, outbox, cursor
        case nextOutboxID = "next_outbox_id"
    }

    /// Decodes the form ``encode(to:)`` writes (records as arrays; a repeated id keeps the last one).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let categories = try container.decode([Category].self, forKey: .categories)
        let locations = try container.decode([Location].self, forKey: .locations)
        self.categories = Dictionary(categories.map { ($0.id, $0) }, uniquingKeysWith: { _, last in last })
        self.locations = Dictionary(locations.map { ($0.id, $0) }, uniquingKeysWith: { _, last in last })
        outbox = try container.decode([OutboxEntry].self, forKey: .outbox)
        cursor = try container.decodeIfPresent(String.self, forKey: .cursor)
        nextOutboxID = try container.decode(Int64.self, forKey: .nextOutboxID)
    }

    /// Encodes the records as arrays sorted by id, so the same state always gives the same JSON.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(categories.values.sorted { $0.id.uuidString < $1.id.uuidString }, forKey: .categories)
        try container.encode(locations.values.sorted { $0.id.uuidString < $1.id.uuidString }, forKey: .locations)
        try container.encode(outbox, forKey: .outbox)
        try container.encodeIfPresent(cursor, forKey: .cursor)
        try container.encode(nextOutboxID, forKey: .nextOutboxID)
    }

    /// Applies one change set (what ``LocalStore/commit(_:)`` makes durable).
    public mutating func apply(_ changes: LocalChanges) {
        for id in changes.removedCategoryIDs { categories[id] = nil }
        for id in changes.removedLocationIDs { locations[id] = nil }
        for category in changes.upsertedCategories { categories[category.id] = category }
        for location in changes.upsertedLocations { locations[location.id] = location }
        if !changes.removedOutboxIDs.isEmpty {
            let removed = Set(changes.removedOutboxIDs)
            outbox.removeAll { removed.contains($0.id) }
        }
        for entry in changes.upsertedOutbox {
            if let index = outbox.firstIndex(where: { $0.id == entry.id }) {
                outbox[index] = entry
            } else {
                outbox.append(entry)
            }
        }
        outbox.sort { $0.id < $1.id }
        if let cursor = changes.cursor { self.cursor = cursor.value }
        if let next = changes.nextOutboxID { nextOutboxID = max(nextOutboxID, next) }
    }
}

/// One atomic change of a ``LocalSnapshot``: removals are applied before upserts.
public struct LocalChanges: Sendable, Hashable {
    /// Categories to insert or replace, by id.
    public var upsertedCategories: [Category] = []
    /// Categories to remove (absent ids are ignored).
    public var removedCategoryIDs: [UUID] = []
    /// Locations to insert or replace, by id.
    public var upsertedLocations: [Location] = []
    /// Locations to remove (absent ids are ignored).
    public var removedLocationIDs: [UUID] = []
    /// New outbox entries, or new versions of existing ones (same id).
    public var upsertedOutbox: [OutboxEntry] = []
    /// Outbox entries to drop: acknowledged by the server or folded into a later change.
    public var removedOutboxIDs: [Int64] = []
    /// A new cursor (`.init(value: nil)` forgets it), or nil to keep it.
    public var cursor: CursorChange?
    /// A new value for ``LocalSnapshot/nextOutboxID`` (it never decreases), or nil to keep it.
    public var nextOutboxID: Int64?

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

/// Keeps the snapshot in memory: for tests, previews, and apps that persist elsewhere.
public actor InMemoryStore: LocalStore {
    private var snapshot: LocalSnapshot

    /// A store starting from `snapshot` (empty by default).
    public init(_ snapshot: LocalSnapshot = LocalSnapshot()) {
        self.snapshot = snapshot
    }

    /// The snapshot held in memory.
    public func load() async throws -> LocalSnapshot { snapshot }

    /// Applies `changes` to the snapshot in memory.
    public func commit(_ changes: LocalChanges) async throws {
        snapshot.apply(changes)
    }
}

/// Keeps the snapshot in one JSON file, rewritten atomically (a temporary file renamed over it)
/// at every commit. Simple and crash-safe; for tens of thousands of records use SQLite.
public actor FileStore: LocalStore {
    /// The JSON file.
    public let url: URL
    private var snapshot: LocalSnapshot?

    /// - Parameter url: the file (created at the first commit; its folder must exist).
    public init(url: URL) {
        self.url = url
    }

    /// Reads the file the first time (an empty snapshot if it does not exist yet), then returns the
    /// state held in memory.
    ///
    /// - Throws: The file's read or decoding error.
    public func load() async throws -> LocalSnapshot {
        if let snapshot { return snapshot }
        let loaded: LocalSnapshot
        if FileManager.default.fileExists(atPath: url.path) {
            loaded = try JSONCoding.decoder.decode(LocalSnapshot.self, from: Data(contentsOf: url))
        } else {
            loaded = LocalSnapshot()
        }
        snapshot = loaded
        return loaded
    }

    /// Applies `changes` and rewrites the whole file atomically; the state in memory changes only once
    /// the file is written.
    ///
    /// - Throws: The file's encoding or write error (the file then keeps the previous state).
    public func commit(_ changes: LocalChanges) async throws {
        var next = try await load()
        next.apply(changes)
        try JSONCoding.encoder.encode(next).write(to: url, options: .atomic)
        snapshot = next
    }
}
