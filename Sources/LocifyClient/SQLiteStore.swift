import Foundation
import GRDB

/// The store for an app: one SQLite database (GRDB.swift) in WAL mode, one row per record, the
/// outbox and the metadata beside them. Each ``commit(_:)`` is one transaction that writes only
/// the rows it changes, so a crash leaves the last committed state and an edit costs the same at
/// ten records or a hundred thousand. The schema carries a version (GRDB migrations): a database
/// written by a newer version of this library is refused rather than misread.
///
/// ```swift
/// let url = try FileManager.default.url(for: .applicationSupportDirectory, in: .userDomainMask,
///                                       appropriateFor: nil, create: true).appendingPathComponent("locify.sqlite")
/// let engine = SyncEngine(api: api, store: try SQLiteStore(path: url.path))
/// ```
public final class SQLiteStore: LocalStore, Sendable {
    /// The database (a pool: readers do not wait for the writer).
    public let database: DatabasePool
    /// Copies the WAL into the database file off the writer's way.
    private let checkpointer: Checkpointer

    /// The writer's page cache, in KiB (SQLite's default is 2 MiB): the first sync's commits of
    /// 10,000 places into a store of 100,000 then read far fewer pages back from the file (about
    /// half their CPU; 64 MiB did no better; bench/RESULTS.md). SQLite fills it only as pages are
    /// used, and GRDB releases it on a memory warning on iOS.
    static let writerCacheKiB = 16_384

    /// Opens (or creates) the database at `path` and brings its schema up to date.
    /// - Throws: ``LocifyError/storeFailed(_:)`` when the file cannot be opened, is not a Locify
    ///   store, or was written by a newer version of this library.
    public init(path: String) throws {
        do {
            var configuration = Configuration()
            configuration.label = "LocifyClient.SQLiteStore"
            configuration.prepareDatabase { db in
                // WAL with synchronous NORMAL: a commit is appended to the WAL without an fsync, and
                // the WAL is synced at each checkpoint. A crash of the app (the SIGKILL test) loses
                // nothing committed; a power loss may lose the last commits before a checkpoint but
                // never leaves a half commit (SQLite's documented guarantee).
                try db.execute(sql: "PRAGMA synchronous = NORMAL")
                if !db.configuration.readonly {
                    // The checkpoints run on the checkpointer's own connection; this one only
                    // checkpoints if the WAL grows past 400 MB regardless (it never should).
                    try db.execute(sql: "PRAGMA wal_autocheckpoint = 100000")
                    try db.execute(sql: "PRAGMA cache_size = -\(Self.writerCacheKiB)")
                }
            }
            database = try DatabasePool(path: path, configuration: configuration)
            try database.write { db in
                if try Self.migrator.hasBeenSuperseded(db) {
                    throw LocifyError.storeFailed("the store at \(path) was written by a newer version of LocifyClient")
                }
            }
            try Self.migrator.migrate(database)
            // A bulk load cut short (the app killed during its first sync) left its indexes out.
            try database.write { try Self.createListingIndexes($0) }
            checkpointer = try Checkpointer(path: path)
            try Self.protect(path)
        } catch let error as LocifyError {
            throw error
        } catch {
            throw LocifyError.storeFailed("cannot open the store at \(path): \(error)")
        }
    }

    /// Files SQLite keeps for the database at `path`.
    static func files(of path: String) -> [String] { ["", "-wal", "-shm"].map { path + $0 } }

    /// On Apple platforms, the store's files are readable once the device was first unlocked after
    /// a restart, and not before (`.completeUntilFirstUserAuthentication`): background syncs still
    /// run while the device is locked.
    private static func protect(_ path: String) throws {
        #if canImport(Darwin)
        for file in files(of: path) where FileManager.default.fileExists(atPath: file) {
            try FileManager.default.setAttributes([.protectionKey: FileProtectionType.completeUntilFirstUserAuthentication], ofItemAtPath: file)
        }
        #endif
    }

    /// The schema, one migration per version. Never edit a shipped migration: add one.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE category (
                        id TEXT PRIMARY KEY NOT NULL,
                        user_id TEXT,
                        name TEXT NOT NULL,
                        icon TEXT,
                        is_default INTEGER NOT NULL,
                        version INTEGER NOT NULL,
                        created_at INTEGER NOT NULL,
                        updated_at INTEGER NOT NULL
                    );
                    CREATE TABLE location (
                        id TEXT PRIMARY KEY NOT NULL,
                        user_id TEXT,
                        category_id TEXT NOT NULL,
                        name TEXT NOT NULL,
                        address TEXT,
                        description TEXT,
                        latitude REAL NOT NULL,
                        longitude REAL NOT NULL,
                        is_favorite INTEGER NOT NULL,
                        image_urls TEXT NOT NULL, -- one URL per line
                        version INTEGER NOT NULL,
                        created_at INTEGER NOT NULL,
                        updated_at INTEGER NOT NULL
                    );
                    CREATE INDEX location_by_category ON location (category_id);
                    CREATE INDEX location_by_created ON location (created_at DESC, id DESC);
                    CREATE INDEX location_by_updated ON location (updated_at DESC, id DESC);
                    CREATE TABLE outbox (
                        id INTEGER PRIMARY KEY NOT NULL,
                        change TEXT NOT NULL,
                        attempted INTEGER NOT NULL
                    );
                    CREATE TABLE metadata (
                        key TEXT PRIMARY KEY NOT NULL,
                        value TEXT
                    );
                    """)
        }
        registerListingMigration(&migrator)
        migrator.registerMigration("v3 refused changes") { db in
            // One row per refused change, beside the record it concerns; `refusal` is the
            // RefusedChange as JSON (the change as sent, the server's error, the time).
            try db.execute(
                sql: """
                    CREATE TABLE refused_change (
                        id INTEGER PRIMARY KEY NOT NULL,
                        record_kind TEXT NOT NULL,
                        record_id TEXT NOT NULL,
                        refusal TEXT NOT NULL
                    );
                    """)
        }
        migrator.registerMigration("v4 field stamps") { db in
            // Issue 36: when each field was last written, in milliseconds, comma-separated in
            // `CategoryField`/`LocationField` order. A row of before was written whole: every
            // field at its `updated_at`.
            try db.execute(
                sql: """
                    ALTER TABLE category ADD COLUMN field_stamps TEXT;
                    ALTER TABLE location ADD COLUMN field_stamps TEXT;
                    UPDATE category SET field_stamps = printf('%d,%d', updated_at, updated_at);
                    UPDATE location SET field_stamps = printf('%d,%d,%d,%d,%d,%d,%d', updated_at, updated_at, updated_at, updated_at,
                        updated_at, updated_at, updated_at);
                    """)
        }
        return migrator
    }

    // MARK: Reads

    /// The cursor, next outbox id and user.
    public func metadata() throws -> StoreMetadata {
        try reading { db in
            var values: [String: String?] = [:]
            for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT key, value FROM metadata")) {
                values[row["key"]] = row["value"] as String?
            }
            return StoreMetadata(
                cursor: values["cursor"] ?? nil, nextOutboxID: (values["next_outbox_id"] ?? nil).flatMap { Int64($0) } ?? 1,
                userID: values["user_id"] ?? nil,
                lastSyncedAt: (values["last_synced_at"] ?? nil).flatMap { Int64($0) }.map { Date(locifyMilliseconds: $0) },
                pendingImages: try (values["pending_images"] ?? nil).map { try JSONCoding.decoder.decode([PendingImage].self, from: Data($0.utf8)) }
                    ?? [],
                serverClockOffset: (values["server_clock_offset"] ?? nil).flatMap { Int64($0) })
        }
    }

    /// One live category (its `locationCount` as the server last sent it; ``categories()`` counts).
    public func category(id: UUID) throws -> Category? {
        try reading { db in
            try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM category WHERE id = ?"), arguments: [id.lowercased]).map(Category.init(row:))
        }
    }

    /// One live location.
    public func location(id: UUID) throws -> Location? {
        try reading { db in
            try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM location WHERE id = ?"), arguments: [id.lowercased]).map(Location.init(row:))
        }
    }

    /// Every live category, by name then id, counted.
    public func categories() throws -> [Category] {
        try reading { try Self.categories($0) }
    }

    /// The live locations `query` selects, in its order (LocalQueries.swift).
    public func locations(_ query: LocalQuery) throws -> [Location] {
        try reading { try Self.locations($0, query) }
    }

    /// How many live locations `query` selects, whatever its page.
    public func locationCount(_ query: LocalQuery) throws -> Int {
        try reading { try Self.locationCount($0, query) }
    }

    /// The ids of the live locations of category `id`.
    public func locationIDs(inCategory id: UUID) throws -> [UUID] {
        try reading { db in
            try String.fetchAll(db.cachedStatement(sql: "SELECT id FROM location WHERE category_id = ?"), arguments: [id.lowercased])
                .compactMap(UUID.init)
        }
    }

    /// The field stamps of record `id` (nil when it has none).
    public func fieldStamps(of kind: RecordKind, id: UUID) throws -> [Int64]? {
        try reading { db in
            let sql = kind == .category ? "SELECT field_stamps FROM category WHERE id = ?" : "SELECT field_stamps FROM location WHERE id = ?"
            return try String.fetchOne(db.cachedStatement(sql: sql), arguments: [id.lowercased]).flatMap(Self.parseStamps)
        }
    }

    /// Stamps as the `field_stamps` column holds them.
    static func formatStamps(_ stamps: [Int64]?) -> String? {
        stamps.map { $0.map(String.init).joined(separator: ",") }
    }

    static func parseStamps(_ text: String) -> [Int64]? {
        let values = text.split(separator: ",").compactMap { Int64($0) }
        return values.isEmpty ? nil : values
    }

    /// The pending outbox entries, in the order made.
    public func outbox() throws -> [OutboxEntry] {
        try reading { db in
            try Row.fetchAll(db.cachedStatement(sql: "SELECT id, change, attempted FROM outbox ORDER BY id")).map { row in
                let text: String = row["change"]
                let change = try JSONCoding.decoder.decode(PushChange.self, from: Data(text.utf8))
                return OutboxEntry(id: row["id"], change: change, attempted: row["attempted"])
            }
        }
    }

    /// The refused changes kept, in the order made.
    public func refusedChanges() throws -> [RefusedChange] {
        try reading { db in
            try String.fetchAll(db.cachedStatement(sql: "SELECT refusal FROM refused_change ORDER BY id")).map { text in
                try JSONCoding.decoder.decode(RefusedChange.self, from: Data(text.utf8))
            }
        }
    }

    /// Runs one read: every read here is a single SELECT, consistent by itself, so it needs no
    /// transaction of its own (GRDB's `read` would open and close one around it); its statement is
    /// prepared once per connection.
    private func reading<Result>(_ body: (Database) throws -> Result) throws -> Result {
        try database.unsafeRead(body)
    }

    // MARK: Writes

    /// Applies `changes` in one transaction, writing only the rows they name.
    public func commit(_ changes: LocalChanges) throws {
        let encodedOutbox = try changes.upsertedOutbox.map { entry in
            (entry, String(decoding: try JSONCoding.encoder.encode(entry.change), as: UTF8.self))
        }
        let encodedRefusals = try changes.upsertedRefusals.map { refusal in
            (refusal, String(decoding: try JSONCoding.encoder.encode(refusal), as: UTF8.self))
        }
        let encodedImages = try changes.pendingImages.map { String(decoding: try JSONCoding.encoder.encode($0), as: UTF8.self) }
        try database.write { db in
            if let reset = changes.resetRecords {
                try Self.deleteAll(db, table: "category", except: reset.keptCategoryIDs)
                try Self.deleteAll(db, table: "location", except: reset.keptLocationIDs)
            }
            if !changes.removedCategoryIDs.isEmpty {
                let statement = try db.cachedStatement(sql: "DELETE FROM category WHERE id = ?")
                for id in changes.removedCategoryIDs { try statement.execute(arguments: [id.lowercased]) }
            }
            if !changes.removedLocationIDs.isEmpty {
                let statement = try db.cachedStatement(sql: "DELETE FROM location WHERE id = ?")
                for id in changes.removedLocationIDs { try statement.execute(arguments: [id.lowercased]) }
            }
            if !changes.upsertedCategories.isEmpty {
                let statement = try db.cachedStatement(
                    sql: """
                        INSERT OR REPLACE INTO category (id, user_id, name, icon, is_default, version, created_at, updated_at, field_stamps)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """)
                for category in changes.upsertedCategories {
                    try statement.execute(arguments: category.rowArguments + [Self.formatStamps(changes.categoryFieldStamps[category.id])])
                }
            }
            if !changes.upsertedLocations.isEmpty {
                let statement = try db.cachedStatement(
                    sql: """
                        INSERT OR REPLACE INTO location (id, user_id, category_id, name, address, description, latitude, longitude,
                            is_favorite, image_urls, version, created_at, updated_at, name_key, search_text, field_stamps)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """)
                for location in changes.upsertedLocations {
                    try statement.execute(
                        arguments: location.rowArguments + location.listingArguments + [Self.formatStamps(changes.locationFieldStamps[location.id])])
                }
            }
            if !changes.removedOutboxIDs.isEmpty {
                let statement = try db.cachedStatement(sql: "DELETE FROM outbox WHERE id = ?")
                for id in changes.removedOutboxIDs { try statement.execute(arguments: [id]) }
            }
            if !encodedOutbox.isEmpty {
                let statement = try db.cachedStatement(sql: "INSERT OR REPLACE INTO outbox (id, change, attempted) VALUES (?, ?, ?)")
                for (entry, change) in encodedOutbox { try statement.execute(arguments: [entry.id, change, entry.attempted]) }
            }
            if let cursor = changes.cursor { try Self.setMetadata(db, "cursor", cursor.value) }
            if let next = changes.nextOutboxID {
                try db.cachedStatement(
                    sql: """
                        INSERT INTO metadata (key, value) VALUES ('next_outbox_id', ?)
                        ON CONFLICT (key) DO UPDATE SET value = MAX(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))
                        """
                ).execute(arguments: [String(next)])
            }
            if let userID = changes.userID { try Self.setMetadata(db, "user_id", userID) }
            if let time = changes.lastSyncedAt { try Self.setMetadata(db, "last_synced_at", String(time.locifyMilliseconds)) }
            if let encodedImages { try Self.setMetadata(db, "pending_images", encodedImages) }
            if let offset = changes.serverClockOffset { try Self.setMetadata(db, "server_clock_offset", String(offset)) }
            try Self.writeRefusals(db, encodedRefusals, removed: changes.removedRefusalIDs)
        }
        checkpointer.wrote(rows: changes.rowCount)
    }

    /// Removes everything, leaving none of it readable in the files: the rows are deleted with
    /// `secure_delete` (their bytes overwritten with zeros), `VACUUM` rebuilds the file without
    /// its free pages, and a TRUNCATE checkpoint copies the WAL into the file and empties it (the
    /// WAL still held the rows' earlier versions).
    public func erase() throws {
        try database.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA secure_delete = ON")
            defer { try? db.execute(sql: "PRAGMA secure_delete = OFF") }
            try db.inTransaction {
                try db.execute(
                    sql: "DELETE FROM category; DELETE FROM location; DELETE FROM outbox; DELETE FROM refused_change; DELETE FROM metadata;")
                return .commit
            }
            try db.execute(sql: "VACUUM")
            try Self.emptyWAL(db)
        }
    }

    /// Copies the WAL into the database file and truncates it to nothing, waiting (up to about
    /// 2 s) for readers and the checkpointer that hold it.
    private static func emptyWAL(_ db: Database) throws {
        var attempt = 0
        while true {
            do {
                try db.checkpoint(.truncate)
                return
            } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY && attempt < 200 {
                attempt += 1
                Thread.sleep(forTimeInterval: 0.01)
            }
        }
    }

    /// Drops the listing's indexes while a first sync fills the store, and builds them after it.
    public func bulkLoad(_ active: Bool) throws {
        try database.write { db in
            try active ? Self.dropListingIndexes(db) : Self.createListingIndexes(db)
        }
    }

    private static func writeRefusals(_ db: Database, _ written: [(RefusedChange, String)], removed: [Int64]) throws {
        if !removed.isEmpty {
            let statement = try db.cachedStatement(sql: "DELETE FROM refused_change WHERE id = ?")
            for id in removed { try statement.execute(arguments: [id]) }
        }
        if !written.isEmpty {
            let statement = try db.cachedStatement(
                sql: "INSERT OR REPLACE INTO refused_change (id, record_kind, record_id, refusal) VALUES (?, ?, ?, ?)")
            for (refusal, text) in written {
                try statement.execute(arguments: [refusal.id, refusal.recordKind.rawValue, refusal.recordID.lowercased, text])
            }
        }
    }

    private static func setMetadata(_ db: Database, _ key: String, _ value: String?) throws {
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO metadata (key, value) VALUES (?, ?)").execute(arguments: [key, value])
    }

    /// Deletes every row of `table` whose id is not in `kept` (a snapshot pull's start).
    private static func deleteAll(_ db: Database, table: String, except kept: Set<UUID>) throws {
        try db.execute(sql: "CREATE TEMP TABLE IF NOT EXISTS kept (id TEXT PRIMARY KEY NOT NULL); DELETE FROM kept;")
        let statement = try db.cachedStatement(sql: "INSERT OR IGNORE INTO kept (id) VALUES (?)")
        for id in kept { try statement.execute(arguments: [id.lowercased]) }
        try db.execute(sql: "DELETE FROM \(table) WHERE id NOT IN (SELECT id FROM kept)")
    }
}

/// Runs SQLite's WAL checkpoints (copying committed pages into the database file, with its
/// fsync) on a connection and thread of its own, when the store has been idle for ``quietPeriod``
/// after at least ``rowsPerCheckpoint`` rows were written, or at once after ``rowsForcingCheckpoint``.
/// A passive checkpoint never blocks the writer nor the readers, so no edit waits for one. (With
/// SQLite's automatic checkpoint, the commit that crossed the threshold ran it: a stall of
/// 150-400 ms once the first sync had filled the WAL; and a checkpoint running beside a burst of
/// edits slowed the edits of its time several-fold, hence the wait for a quiet moment.)
private final class Checkpointer: @unchecked Sendable {
    static let rowsPerCheckpoint = 1_000
    static let rowsForcingCheckpoint = 5_000
    static let quietPeriod: DispatchTimeInterval = .milliseconds(50)
    private let connection: DatabaseQueue
    private let queue = DispatchQueue(label: "LocifyClient.SQLiteStore.checkpoint", qos: .utility)
    // Guarded by `lock`.
    private let lock = NSLock()
    private var rowsSinceCheckpoint = 0
    private var lastWrite = DispatchTime.now()
    private var isScheduled = false

    init(path: String) throws {
        var configuration = Configuration()
        configuration.label = "LocifyClient.SQLiteStore.checkpoint"
        connection = try DatabaseQueue(path: path, configuration: configuration)
    }

    /// Counts rows written, and schedules a checkpoint when enough were.
    func wrote(rows: Int) {
        lock.lock()
        rowsSinceCheckpoint += rows
        lastWrite = .now()
        let schedule = rowsSinceCheckpoint >= Self.rowsPerCheckpoint && !isScheduled
        if schedule { isScheduled = true }
        lock.unlock()
        if schedule { queue.asyncAfter(deadline: .now() + Self.quietPeriod) { [self] in run() } }
    }

    /// Checkpoints if the store was quiet long enough (or too much was written), else waits on.
    private func run() {
        lock.lock()
        let quietSince = lastWrite + Self.quietPeriod
        let due = quietSince <= .now() || rowsSinceCheckpoint >= Self.rowsForcingCheckpoint
        if due {
            rowsSinceCheckpoint = 0
            isScheduled = false
        }
        lock.unlock()
        guard due else {
            queue.asyncAfter(deadline: quietSince) { [self] in run() }
            return
        }
        // A failed checkpoint loses nothing (the WAL keeps the pages); the next one retries.
        _ = try? connection.writeWithoutTransaction { try $0.checkpoint(.passive) }
    }
}

extension LocalChanges {
    /// Rows a commit of these changes writes, about (the checkpoints' pace).
    var rowCount: Int {
        upsertedCategories.count + removedCategoryIDs.count + upsertedLocations.count + removedLocationIDs.count
            + upsertedOutbox.count + removedOutboxIDs.count + 1
    }
}

extension Category {
    init(row: Row) throws {
        guard let id = UUID(uuidString: row["id"]) else { throw LocifyError.storeFailed("a category row without a UUID") }
        self.init(
            id: id, userID: row["user_id"], name: row["name"], icon: row["icon"], isDefault: row["is_default"],
            locationCount: row["location_count"] ?? 0, version: row["version"],
            createdAt: Date(locifyMilliseconds: row["created_at"]), updatedAt: Date(locifyMilliseconds: row["updated_at"]))
    }

    var rowArguments: StatementArguments {
        [
            id.lowercased, userID, name, icon, isDefault, version, createdAt.locifyMilliseconds, updatedAt.locifyMilliseconds,
        ]
    }
}

extension Location {
    init(row: Row) throws {
        guard let id = UUID(uuidString: row["id"]), let categoryID = UUID(uuidString: row["category_id"]) else {
            throw LocifyError.storeFailed("a location row without a UUID")
        }
        let images: String = row["image_urls"]
        self.init(
            id: id, userID: row["user_id"], categoryID: categoryID, name: row["name"], address: row["address"],
            description: row["description"], latitude: row["latitude"], longitude: row["longitude"], isFavorite: row["is_favorite"],
            imageURLs: images.isEmpty ? [] : images.split(separator: "\n").map(String.init), version: row["version"],
            createdAt: Date(locifyMilliseconds: row["created_at"]), updatedAt: Date(locifyMilliseconds: row["updated_at"]))
    }

    var rowArguments: StatementArguments {
        // One URL per line: a URL holds no whitespace (LocifyRules), and this costs no JSON coder per row.
        let images = imageURLs.joined(separator: "\n")
        return [
            id.lowercased, userID, categoryID.lowercased, name, address, description, latitude, longitude, isFavorite, images, version,
            createdAt.locifyMilliseconds, updatedAt.locifyMilliseconds,
        ]
    }
}
