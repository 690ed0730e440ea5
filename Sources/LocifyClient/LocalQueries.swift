import Foundation
import GRDB
import LocifyRules

// MARK: - The query

/// A query on the device's live locations: the filters, order and page of the server's listing
/// (`GET /v1/locations`), answered offline from the ``LocalStore``. After a sync it selects the
/// same records in the same order as the server does for the same parameters: `search` is the
/// server's `q` (a case-insensitive literal substring of name, address or description; `%` and
/// `_` are plain characters), and every order ends with the id, ascending (``ListingRules``).
///
/// ```swift
/// let page = LocalQuery(isFavorite: true, search: "café", sort: .name).page(1, size: 20)
/// let favourites = try await engine.locations(page)
/// let total = try await engine.locationCount(page)
/// ```
public struct LocalQuery: Sendable, Hashable {
    /// The orders the listing offers: `createdAt` and `updatedAt` newest first, `name` A-Z
    /// case-insensitively (by ``ListingRules/nameKeyPrecedes(_:_:)``); ties by id ascending.
    public typealias Sort = LocifyAPIClient.LocationQuery.Sort

    /// Only the locations of this category.
    public var categoryID: UUID?
    /// Only favourites (true) or only the others (false); nil for both.
    public var isFavorite: Bool?
    /// The server's `q`: a case-insensitive substring of the name, address or description; nil
    /// or empty for no filter. The engine refuses what the server refuses (control characters,
    /// more than 255 characters) with ``LocifyError/invalidInput(_:)``.
    public var search: String?
    /// The order (default: newest `created_at` first, then id).
    public var sort: Sort
    /// At most this many (nil: all). A query made without a limit reads ``defaultLimit``.
    public var limit: Int?
    /// Skip this many first.
    public var offset: Int

    /// The page a query reads unless told otherwise: 100 locations (the API's `max_page_size`), so
    /// that a list never reads the whole copy by accident. Pass `limit: nil` for every match, or
    /// page with ``page(_:size:)``.
    public static let defaultLimit = 100

    /// A query; the defaults select the newest ``defaultLimit`` live locations.
    public init(
        categoryID: UUID? = nil, isFavorite: Bool? = nil, search: String? = nil, sort: Sort = .createdAt,
        limit: Int? = LocalQuery.defaultLimit, offset: Int = 0
    ) {
        self.categoryID = categoryID
        self.isFavorite = isFavorite
        self.search = search
        self.sort = sort
        self.limit = limit
        self.offset = offset
    }

    /// This query limited to the server's page `number` (from 1) of `size` records: what
    /// `GET /v1/locations?page=number&size=size` returns.
    public func page(_ number: Int, size: Int) -> LocalQuery {
        var paged = self
        paged.limit = max(size, 0)
        let (offset, overflow) = (max(number, 1) - 1).multipliedReportingOverflow(by: max(size, 0))
        paged.offset = overflow ? Int.max : offset
        return paged
    }

    /// The same filters and order, without the page (what a total counts).
    var unpaged: LocalQuery {
        var query = self
        query.limit = nil
        query.offset = 0
        return query
    }

    /// The search in the form matched (lower-cased), or nil for no search.
    var searchKey: String? {
        guard let search, !search.isEmpty else { return nil }
        return ListingRules.searchKey(search)
    }

    /// Whether `location` passes the filters.
    func matches(_ location: Location) -> Bool {
        (categoryID == nil || location.categoryID == categoryID) && (isFavorite == nil || location.isFavorite == isFavorite)
            && (searchKey == nil || search.map { ListingRules.matches(searchText: location.searchText, term: $0) } == true)
    }

    /// Whether `a` comes before `b` in this query's order (the server's: ties broken by id).
    func precedes(_ a: Location, _ b: Location) -> Bool {
        switch sort {
        case .createdAt: return Self.newer(a.createdAt, a.id, than: b.createdAt, b.id)
        case .updatedAt: return Self.newer(a.updatedAt, a.id, than: b.updatedAt, b.id)
        case .name: return Self.byName(a.name, a.id, before: b.name, b.id)
        }
    }

    /// Whether category `a` comes before `b` in the server's order of categories: name key, then id.
    static func precedes(_ a: Category, _ b: Category) -> Bool { byName(a.name, a.id, before: b.name, b.id) }

    private static func newer(_ a: Date, _ aID: UUID, than b: Date, _ bID: UUID) -> Bool {
        let (aTime, bTime) = (a.locifyMilliseconds, b.locifyMilliseconds)
        return aTime != bTime ? aTime > bTime : idPrecedes(aID, bID)
    }

    private static func byName(_ a: String, _ aID: UUID, before b: String, _ bID: UUID) -> Bool {
        let (aKey, bKey) = (TextRules.sortKey(a), TextRules.sortKey(b))
        if ListingRules.nameKeyPrecedes(aKey, bKey) { return true }
        if ListingRules.nameKeyPrecedes(bKey, aKey) { return false }
        return idPrecedes(aID, bID)
    }

    /// PostgreSQL orders `uuid` by its 16 bytes, as the lower-case text the stores keep sorts.
    private static func idPrecedes(_ a: UUID, _ b: UUID) -> Bool {
        withUnsafeBytes(of: a.uuid) { a in withUnsafeBytes(of: b.uuid) { b in a.lexicographicallyPrecedes(b) } }
    }
}

extension Location {
    /// What the server's `q` searches (``ListingRules/searchText(name:address:description:)``).
    var searchText: String { ListingRules.searchText(name: name, address: address, description: description) }
}

// MARK: - Live queries

/// Results that stay current: the first value is the query's result now (already waiting when
/// the iteration starts), and a new one follows every committed change of the store that alters
/// it (local edits, pulled changes, a resync; an unchanged result is not repeated). Each
/// `for try await` runs its own observation, which stops when the loop ends or its task is
/// cancelled. Values are not buffered: a slow consumer gets the latest. Fails with
/// ``LocifyError/storeFailed(_:)``. ``currentValue()`` reads the result synchronously, for a
/// view's first frame (no empty list before the first value arrives).
///
/// Commits made through another connection to the same file (a widget, a share extension) are
/// not seen by themselves: the app calls ``SyncEngine/reloadAfterExternalChanges()`` when it
/// learns of them (e.g. when it returns to the foreground).
///
/// ```swift
/// for try await places in engine.observeLocations(LocalQuery(search: text, sort: .name)) {
///     self.places = places
/// }
/// ```
public struct LiveQuery<Value: Sendable>: AsyncSequence, Sendable {
    /// Each value is the whole result of the query at one moment.
    public typealias Element = Value
    /// One observation's values.
    public typealias AsyncIterator = AsyncThrowingStream<Value, any Error>.Iterator

    private let start: @Sendable () -> AsyncThrowingStream<Value, any Error>
    private let read: @Sendable () throws -> Value

    /// A live query whose observations `start` begins, one per iteration; `read` reads the result now.
    init(read: @escaping @Sendable () throws -> Value, start: @escaping @Sendable () -> AsyncThrowingStream<Value, any Error>) {
        self.read = read
        self.start = start
    }

    /// A live query that fails at once with `error`.
    static func failing(_ error: LocifyError) -> LiveQuery {
        LiveQuery(read: { throw error }, start: { AsyncThrowingStream { $0.finish(throwing: error) } })
    }

    /// The result now, read synchronously (a view's initial state): the first value an iteration
    /// would give.
    public func currentValue() throws -> Value {
        do {
            return try read()
        } catch let error as LocifyError {
            throw error
        } catch {
            throw LocifyError.storeFailed(String(describing: error))
        }
    }

    /// Starts one observation.
    public func makeAsyncIterator() -> AsyncIterator { start().makeAsyncIterator() }
}

/// A ``LocalStore`` whose query results can be observed (``LiveQuery``): ``SQLiteStore`` (GRDB's
/// `ValueObservation`, which sees the commits of its own connections only: another process's
/// are announced with ``SQLiteStore/externalChangesCommitted()``) and ``InMemoryStore`` (notified
/// by its own commits).
public protocol ObservableLocalStore: LocalStore {
    /// ``LocalStore/locations(_:)``, kept current.
    func observeLocations(_ query: LocalQuery) -> LiveQuery<[Location]>
    /// ``LocalStore/locationCount(_:)``, kept current.
    func observeLocationCount(_ query: LocalQuery) -> LiveQuery<Int>
    /// ``LocalStore/categories()``, kept current (counts included).
    func observeCategories() -> LiveQuery<[Category]>
}

/// The callbacks of the live queries open on an ``InMemoryStore``, called after each commit.
final class StoreObservers: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSLock()
    private var observers: [UUID: @Sendable () -> Void] = [:]

    /// Registers `observer`; returns its key for ``remove(_:)``.
    func add(_ observer: @escaping @Sendable () -> Void) -> UUID {
        let key = UUID()
        lock.withLock { observers[key] = observer }
        return key
    }

    func remove(_ key: UUID) {
        _ = lock.withLock { observers.removeValue(forKey: key) }
    }

    /// How many live queries are open.
    var count: Int { lock.withLock { observers.count } }

    /// Calls every observer (outside the lock: an observer reads the store).
    func notify() {
        for observer in lock.withLock({ Array(observers.values) }) { observer() }
    }
}

/// The last value an observation sent, so an unchanged result is not sent again.
private final class LastValue<Value: Equatable>: @unchecked Sendable {
    // Guarded by `lock`, which is held while a value is read and sent, so values go out in order.
    private let lock = NSLock()
    private var value: Value?

    func send(_ read: () throws -> Value, to continuation: AsyncThrowingStream<Value, any Error>.Continuation) {
        lock.withLock {
            do {
                let fresh = try read()
                if fresh != value {
                    value = fresh
                    continuation.yield(fresh)
                }
            } catch {
                continuation.finish(throwing: LocifyError.storeFailed(String(describing: error)))
            }
        }
    }
}

extension InMemoryStore: ObservableLocalStore {
    /// ``locations(_:)``, read again after each commit.
    public func observeLocations(_ query: LocalQuery) -> LiveQuery<[Location]> { observe { try $0.locations(query) } }
    /// ``locationCount(_:)``, read again after each commit.
    public func observeLocationCount(_ query: LocalQuery) -> LiveQuery<Int> { observe { try $0.locationCount(query) } }
    /// ``categories()``, read again after each commit.
    public func observeCategories() -> LiveQuery<[Category]> { observe { try $0.categories() } }

    /// How many live queries are observing this store (for tests of their cancellation).
    public var observerCount: Int { observers.count }

    private func observe<Value: Equatable & Sendable>(_ read: @escaping @Sendable (InMemoryStore) throws -> Value) -> LiveQuery<Value> {
        LiveQuery(read: { [self] in try read(self) }) { [self] in
            AsyncThrowingStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
                let last = LastValue<Value>()
                let key = observers.add { [weak self] in
                    guard let self else { return }
                    last.send({ try read(self) }, to: continuation)
                }
                continuation.onTermination = { [weak self] _ in self?.observers.remove(key) }
                last.send({ try read(self) }, to: continuation)
            }
        }
    }
}

// MARK: - SQLiteStore

extension SQLiteStore: ObservableLocalStore {
    /// ``locations(_:)``, read again after each transaction that changes the rows it read.
    public func observeLocations(_ query: LocalQuery) -> LiveQuery<[Location]> { observe { try Self.locations($0, query) } }
    /// ``locationCount(_:)``, read again after each transaction that changes the rows it read.
    public func observeLocationCount(_ query: LocalQuery) -> LiveQuery<Int> { observe { try Self.locationCount($0, query) } }
    /// ``categories()``, read again after each transaction that changes the rows it read.
    public func observeCategories() -> LiveQuery<[Category]> { observe { try Self.categories($0) } }

    /// A GRDB `ValueObservation` of `fetch`, duplicates removed, delivered in order on a queue
    /// of its own, after the result read at once (waiting when the iteration starts); cancelled
    /// when the consumer stops.
    private func observe<Value: Equatable & Sendable>(_ fetch: @escaping @Sendable (Database) throws -> Value) -> LiveQuery<Value> {
        let database = database
        return LiveQuery(read: { try database.read(fetch) }) {
            AsyncThrowingStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
                let last = LastValue<Value>()
                last.send({ try database.read(fetch) }, to: continuation)
                let cancellable = ValueObservation.tracking(fetch).start(
                    in: database, scheduling: .async(onQueue: DispatchQueue(label: "LocifyClient.LiveQuery")),
                    onError: { continuation.finish(throwing: LocifyError.storeFailed(String(describing: $0))) },
                    onChange: { value in last.send({ value }, to: continuation) })
                continuation.onTermination = { _ in cancellable.cancel() }
            }
        }
    }

    /// Tells this store's live queries that another connection to its file (a widget, a share
    /// extension, another ``SQLiteStore``) committed changes: each reads its result again.
    /// GRDB observes the commits of its own connections only.
    public func externalChangesCommitted() throws {
        try database.write { try $0.notifyChanges(in: .fullDatabase) }
    }

    /// Schema v2: the listing's keys beside each location, computed in Swift as the server
    /// computes its own (`ListingRules`; SQLite's `lower` folds ASCII only), and one index per
    /// order, each ending with id ascending as the server's, and per order within a category (a
    /// category's screen; by `updated_at` it sorts the category's rows). Existing rows get their
    /// keys here.
    static func registerListingMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v2 listing keys") { db in
            try db.execute(
                sql: """
                    ALTER TABLE location ADD COLUMN name_key TEXT NOT NULL DEFAULT '';
                    ALTER TABLE location ADD COLUMN search_text TEXT NOT NULL DEFAULT '';
                    """)
            let update = try db.makeStatement(sql: "UPDATE location SET name_key = ?, search_text = ? WHERE id = ?")
            for row in try Row.fetchAll(db, sql: "SELECT id, name, address, description FROM location") {
                let name: String = row["name"]
                let searchText = ListingRules.searchText(name: name, address: row["address"], description: row["description"])
                try update.execute(arguments: [TextRules.sortKey(name), searchText, row["id"] as String])
            }
            try db.execute(sql: "DROP INDEX location_by_created; DROP INDEX location_by_updated; DROP INDEX location_by_category;")
            try createListingIndexes(db)
        }
    }

    /// The listing's indexes: one per order, each ending with id ascending as the server's, and
    /// per order within a category.
    private static let listingIndexes = [
        (name: "location_by_created", columns: "created_at DESC, id"),
        (name: "location_by_updated", columns: "updated_at DESC, id"),
        (name: "location_by_name", columns: "name_key, id"),
        (name: "location_by_category", columns: "category_id, name_key, id"),
        (name: "location_by_category_created", columns: "category_id, created_at DESC, id"),
    ]

    /// Creates the listing's indexes that are missing (all of them after a bulk load, or after
    /// one that a crash cut short).
    static func createListingIndexes(_ db: Database) throws {
        for index in listingIndexes {
            try db.execute(sql: "CREATE INDEX IF NOT EXISTS \(index.name) ON location (\(index.columns))")
        }
    }

    /// Drops the listing's indexes for a bulk load: a first sync of 100,000 places maintained
    /// five more B-trees row by row; built once at its end, they cost a sort each.
    static func dropListingIndexes(_ db: Database) throws {
        for index in listingIndexes {
            try db.execute(sql: "DROP INDEX IF EXISTS \(index.name)")
        }
    }

    /// The live locations `query` selects, in its order: `name_key` and `id` are stored as text
    /// in SQLite's BINARY collation, byte order, as the server's `COLLATE "C"` and `uuid` order.
    static func locations(_ db: Database, _ query: LocalQuery) throws -> [Location] {
        let (filter, arguments) = sqlFilter(query)
        let order =
            switch query.sort {
            case .createdAt: "created_at DESC, id"
            case .updatedAt: "updated_at DESC, id"
            case .name: "name_key, id"
            }
        return try Row.fetchAll(
            db.cachedStatement(sql: "SELECT * FROM location\(filter) ORDER BY \(order) LIMIT ? OFFSET ?"),
            arguments: arguments + [query.limit ?? -1, query.offset]
        ).map(Location.init(row:))
    }

    /// How many live locations `query` selects, whatever its page.
    static func locationCount(_ db: Database, _ query: LocalQuery) throws -> Int {
        let (filter, arguments) = sqlFilter(query)
        return try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM location\(filter)"), arguments: arguments) ?? 0
    }

    /// Every live category in the server's order, with its live locations counted.
    static func categories(_ db: Database) throws -> [Category] {
        try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT category.*, COALESCE(counts.n, 0) AS location_count FROM category
                    LEFT JOIN (SELECT category_id, COUNT(*) AS n FROM location GROUP BY category_id) counts
                    ON counts.category_id = category.id
                    """)
        ).map(Category.init(row:)).sorted(by: LocalQuery.precedes)
    }

    /// The WHERE clause of `query`'s filters (constant text, values bound) and its arguments. A
    /// search is `instr` on the stored search text: a literal substring, as the server's escaped
    /// `LIKE` (no wildcard to escape).
    private static func sqlFilter(_ query: LocalQuery) -> (String, StatementArguments) {
        var conditions: [String] = []
        var arguments: StatementArguments = []
        if let categoryID = query.categoryID {
            conditions.append("category_id = ?")
            arguments += [categoryID.lowercased]
        }
        if let isFavorite = query.isFavorite {
            conditions.append("is_favorite = ?")
            arguments += [isFavorite]
        }
        if let key = query.searchKey {
            conditions.append("instr(search_text, ?) > 0")
            arguments += [key]
        }
        return (conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND "), arguments)
    }
}

extension Location {
    /// The listing's keys the SQLite store keeps beside the record: `name_key`, `search_text`.
    var listingArguments: StatementArguments { [TextRules.sortKey(name), searchText] }
}

// MARK: - The engine's queries

extension SyncEngine {
    /// How many live locations `query` selects, whatever its page (the listing's `total_count`).
    public func locationCount(_ query: LocalQuery = LocalQuery()) async throws -> Int {
        try Self.checkSearch(query)
        return try reading { try $0.locationCount(query) }
    }

    /// ``locations(_:)``, kept current: a ``LiveQuery`` that sends the result now and again after
    /// every change of the local copy that alters it (edits on this device, pulled changes).
    /// Needs an ``ObservableLocalStore`` (both stores of this library are).
    public nonisolated func observeLocations(_ query: LocalQuery = LocalQuery()) -> LiveQuery<[Location]> {
        observing(query) { $0.observeLocations(query) }
    }

    /// ``locationCount(_:)``, kept current (a badge, a list's header).
    public nonisolated func observeLocationCount(_ query: LocalQuery = LocalQuery()) -> LiveQuery<Int> {
        observing(query) { $0.observeLocationCount(query) }
    }

    /// ``categories()``, kept current: the counts follow the locations.
    public nonisolated func observeCategories() -> LiveQuery<[Category]> {
        observing(LocalQuery()) { $0.observeCategories() }
    }

    private nonisolated func observing<Value>(
        _ query: LocalQuery, _ observe: (any ObservableLocalStore) -> LiveQuery<Value>
    ) -> LiveQuery<Value> {
        do {
            try Self.checkSearch(query)
        } catch {
            return .failing(error)
        }
        guard let store = store as? any ObservableLocalStore else {
            return .failing(.storeFailed("\(type(of: store)) cannot be observed: it is not an ObservableLocalStore"))
        }
        return observe(store)
    }

    /// Another process (a widget, a share extension) committed changes to this engine's store
    /// file: the engine reads its outbox, refused changes and metadata from the store again (so
    /// that it pushes the other process's edits), and the live queries read their results again.
    /// Call it when the app learns of such commits (e.g. on returning to the foreground). GRDB's
    /// observation sees the commits of its own connections only.
    public func reloadAfterExternalChanges() throws {
        state = nil
        _ = try loaded()
        if let store = store as? SQLiteStore {
            try reading { _ in try store.externalChangesCommitted() }
        }
        if !(state?.outbox.isEmpty ?? true) { scheduler?.localEdit() }
    }

    /// Refuses the search the server refuses (E001, `q`), with its message.
    static func checkSearch(_ query: LocalQuery) throws(LocifyError) {
        _ = try checked { () throws(RuleViolation) in try ListingRules.searchTerm(query.search) }
    }

}
