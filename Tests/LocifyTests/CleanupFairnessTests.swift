import FirebaseAdmin
import Foundation
@testable import Locify
@testable import LocifyJobs
import Postgres
import Testing
import TestSupport
import TestSupportDatabase

/// Issue 23, item 3: the clean-up queue is fair across users (a user's account deletion is not
/// stuck behind another user's backlog), a request queues jobs per folder and per batch of
/// objects, never per object, and a big cascade's bookkeeping is linear.
@Suite("Clean-up: fair claims, batched objects, linear cascades", .serialized)
struct CleanupFairnessTests {
    static func worker(_ db: LocifyTestDatabase, _ executor: CleanupScriptedExecutor) -> (CleanupWorker, ConnectionPool) {
        let pool = ConnectionPool(configuration: db.database.configuration, size: 1, logger: TestDatabase.logger)
        return (CleanupWorker(pool: pool, executor: executor, logger: TestDatabase.logger), pool)
    }

    /// A new caller owning one category, and an id for a location not written yet.
    static func callerWithCategory(_ db: LocifyTestDatabase) throws -> (Caller, category: UUID, location: UUID) {
        let caller = TestConstants.newCaller()
        let category = UUID()
        _ = try db.services.categories.create(caller, CategoryDraft(id: category, name: "C"))
        return (caller, category, UUID())
    }

    /// The objects queued one per job (`storage_object`), in queueing order.
    static func queuedObjects(_ db: LocifyTestDatabase) throws -> [String] {
        try db.pool.withConnection { connection in
            try connection.query("SELECT target FROM cleanup_jobs WHERE kind = 'storage_object' ORDER BY id").map { try $0.decode(0) }
        }
    }

    /// Claims and runs `count` jobs, one at a time.
    static func run(_ worker: CleanupWorker, _ count: Int) throws {
        for _ in 0..<count { #expect(try worker.runNextJob()) }
    }

    @Test("behind one user's 100,000 queued jobs, another user's account deletion queued meanwhile starts with the next job")
    func accountDeletionBehindABacklog() throws {
        let db = try LocifyTestDatabase.create()
        defer { db.drop() }
        let busy = TestConstants.newCaller()
        let jobs = (0..<100_000).map { CleanupJob(kind: .storageObject, target: "locations/\(busy.userID)/l/\($0).jpg") }
        try db.pool.withTransaction { connection in try CleanupJobStore.enqueue(connection, userID: busy.userID, jobs) }
        let executor = CleanupScriptedExecutor()
        let (worker, pool) = Self.worker(db, executor)
        defer { pool.close() }
        try Self.run(worker, 3)
        #expect(executor.calls.map(\.target) == (0..<3).map { "locations/\(busy.userID)/l/\($0).jpg" })

        // The other user deletes their account while the worker runs the busy user's fourth job.
        let leaving = TestConstants.newCaller()
        _ = try db.services.users.profile(leaving)
        let trigger = "locations/\(busy.userID)/l/3.jpg"
        let services = db.services
        executor.onCall { call in
            if call.target == trigger { #expect(throws: Never.self) { try services.users.delete(leaving) } }
        }
        try Self.run(worker, 1)
        executor.onCall(nil)
        try Self.run(worker, 1)
        #expect(executor.calls.last == .init(kind: .storagePrefix, target: "locations/\(leaving.userID)/"), "the next job is theirs")
        // Then the users take turns: the account is gone within its share of the next claims.
        try Self.run(worker, 4)
        #expect(
            executor.calls.dropFirst(3).map(\.target) == [
                trigger, "locations/\(leaving.userID)/", "locations/\(busy.userID)/l/4.jpg", "categories/\(leaving.userID)/",
                "locations/\(busy.userID)/l/5.jpg", leaving.userID,
            ])
        let left: Int64 = try db.pool.withConnection { connection in
            try connection.query("SELECT count(*) FROM cleanup_jobs WHERE user_id = \(leaving.userID)").first?.decode(0) ?? -1
        }
        #expect(left == 0)
    }

    @Test("a user's jobs keep their queueing order, also when queued in several requests, and users alternate")
    func perUserOrderAndAlternation() throws {
        let db = try LocifyTestDatabase.create()
        defer { db.drop() }
        let first = "fair-a"
        let second = "fair-b"
        try db.pool.withTransaction { connection in
            try CleanupJobStore.enqueue(connection, userID: first, (0..<3).map { CleanupJob(kind: .storageObject, target: "a\($0)") })
        }
        try db.pool.withTransaction { connection in
            try CleanupJobStore.enqueue(connection, userID: second, (0..<2).map { CleanupJob(kind: .storageObject, target: "b\($0)") })
        }
        try db.pool.withTransaction { connection in
            try CleanupJobStore.enqueue(connection, userID: first, [CleanupJob(kind: .storageObject, target: "a3")])
        }
        let executor = CleanupScriptedExecutor()
        let (worker, pool) = Self.worker(db, executor)
        defer { pool.close() }
        #expect(worker.runDueJobs() == 6)
        #expect(executor.calls.map(\.target) == ["a0", "b0", "a1", "b1", "a2", "a3"])
    }

    @Test("a job waiting out a backoff does not hold the queue's turn back: a new user takes turns with the one being served")
    func backoffDoesNotPinTheTurn() throws {
        let db = try LocifyTestDatabase.create()
        defer { db.drop() }
        func enqueue(_ userID: String, _ targets: [String]) throws {
            try db.pool.withTransaction { connection in
                try CleanupJobStore.enqueue(connection, userID: userID, targets.map { CleanupJob(kind: .storageObject, target: $0) })
            }
        }
        try enqueue("backoff-a", ["a0"])
        try db.pool.withConnection { connection in
            try connection.query("UPDATE cleanup_jobs SET run_after = now() + interval '1 hour', attempts = 1 WHERE user_id = 'backoff-a'")
        }
        try enqueue("backoff-b", (0..<10).map { "b\($0)" })
        let executor = CleanupScriptedExecutor()
        let (worker, pool) = Self.worker(db, executor)
        defer { pool.close() }
        try Self.run(worker, 5)
        try enqueue("backoff-c", (0..<3).map { "c\($0)" })
        try Self.run(worker, 6)
        #expect(executor.calls.map(\.target) == ["b0", "b1", "b2", "b3", "b4", "b5", "c0", "b6", "c1", "b7", "c2"])
    }

    @Test("objects are queued one per job up to 100, else 100 to a job, each once; folders likewise with 20")
    func batches() {
        let paths = (0..<250).map { "locations/u/shared/\($0).jpg" }
        let jobs = CleanupJob.objects(paths + paths.prefix(10))
        #expect(jobs.map(\.kind) == [.storageObjects, .storageObjects, .storageObjects])
        let expectedTargets: [[String]] = [Array(paths[0..<100]), Array(paths[100..<200]), Array(paths[200..<250])]
        #expect(jobs.map { CleanupJob.targets(of: $0.target, kind: $0.kind) } == expectedTargets)
        #expect(CleanupJob.objects(Array(paths.prefix(100))) == paths.prefix(100).map { CleanupJob(kind: .storageObject, target: $0) })
        #expect(CleanupJob.objects([]).isEmpty)
        let folders = (0..<41).map { "locations/u/\($0)/" }
        #expect(CleanupJob.folders(folders).map(\.kind) == [.storagePrefixes, .storagePrefixes, .storagePrefix])
        #expect(CleanupJob.folders(folders).last?.target == "locations/u/40/")
        #expect(CleanupJob.folders(Array(folders.prefix(2))).map(\.kind) == [.storagePrefix, .storagePrefix])
    }

    @Test("a record's folders spell its id as uuidString does, in lower and in upper case, once when it has no letter")
    func folderSpellings() {
        for _ in 0..<100 {
            let id = UUID()
            #expect(CleanupJob.locationFolders(userID: "u", id: id) == ["locations/u/\(id.uuidString.lowercased())/", "locations/u/\(id.uuidString)/"])
        }
        let digitsOnly = UUID(uuid: (0x01, 0x23, 0x45, 0x67, 0x89, 0x01, 0x23, 0x45, 0x67, 0x89, 0x01, 0x23, 0x45, 0x67, 0x89, 0x01))
        #expect(CleanupJob.categoryFolders(userID: "u", id: digitsOnly) == ["categories/u/01234567-8901-2345-6789-012345678901/"])
    }

    @Test("a cascade reads no URL plainly inside the location's own folder; whatever it skips, parsing would not queue either")
    func plainURLsInsideFolders() throws {
        let db = try LocifyTestDatabase.create()
        defer { db.drop() }
        let (caller, category, location) = try Self.callerWithCategory(db)
        let uid = caller.userID
        _ = try db.services.locations.create(
            caller, LocationDraft(id: location, categoryID: category, name: "L", latitude: 1, longitude: 1))
        let base = "https://firebasestorage.googleapis.com/v0/b/\(TestConstants.bucket)/o/locations%2F\(uid)%2F"
        let upper = location.uuidString
        let lower = location.uuidString.lowercased()
        let omitted = [
            base + "\(upper)%2Fa.jpg?alt=media&token=t", base + "\(lower)%2Fdeep%2Fb.jpg", base + "\(upper)%2F..%2F..%2Fu2%2Fx.jpg",
            base + "\(upper)%2Fbad%zz", base + "\(upper)%2Fnul%00.jpg", base + "\(upper)%2F",
            "https://firebasestorage.googleapis.com/v0/b/other.appspot.com/o/locations%2F\(uid)%2F\(upper)%2Fa.jpg",
        ]
        let returned = [
            base + "\(upper)0%2Fa.jpg", base + "shared%2Fa.jpg",
            "HTTPS://firebasestorage.googleapis.com/v0/b/\(TestConstants.bucket)/o/locations%2F\(uid)%2F\(upper)%2Fa.jpg",
            "https://storage.googleapis.com/\(TestConstants.bucket)/locations/\(uid)/\(upper)/a.jpg",
            "gs://\(TestConstants.bucket)/locations/\(uid)/\(upper)/a.jpg",
            "https://firebasestorage.googleapis.com/v0/b/\(TestConstants.bucket)/o/locations%2F\(uid)%2F\(upper)%252Fa.jpg",
            "https://firebasestorage.googleapis.com/v0/b/b%2Fc/o/locations%2F\(uid)%2F\(upper)%2Fa.jpg",
        ]
        // The rule of migrations/0007, one URL at a time, and for a uid that would need encoding.
        func outside(_ urls: [String], userID: String = uid) -> Bool {
            StorageScope.imagesOutsideFolder(urls, userID: userID, id: location)
        }
        for url in omitted { #expect(!outside([url]), "\(url)") }
        for url in returned { #expect(outside([url]), "\(url)") }
        #expect(!outside([]) && !outside(omitted) && outside(omitted + returned.prefix(1)))
        #expect(outside(["https://firebasestorage.googleapis.com/v0/b/b/o/locations%2Fu 1%2F\(upper)%2Fa.jpg"], userID: "u 1"))
        // Whatever it leaves out, the server's own parsing would not queue either.
        let scope = StorageScope(bucket: TestConstants.bucket, skips: CleanupSkips(logger: TestDatabase.logger))
        let folders = Set(CleanupJob.locationFolders(userID: uid, id: location))
        #expect(scope.ownedObjects(omitted, userID: uid).filter { !CleanupJob.isInside($0, anyOf: folders) }.isEmpty)
        // Through the cascade, a row written before migration 0007 (flag NULL) with URLs stored
        // before the write-time rule: only the owned objects outside the folder are queued.
        try db.pool.withConnection { connection in
            try connection.query(
                """
                UPDATE locations SET image_urls = \(omitted + returned), images_outside_folder = NULL
                WHERE user_id = \(uid) AND id = \(location)
                """)
        }
        _ = try db.services.categories.delete(caller, id: category, updatedAt: nil, reassignTo: nil)
        CascadeWorker(pool: db.pool, cascades: db.services.cascades, logger: TestDatabase.logger).settleNow()  // the batches queue the locations' clean-up (PendingCascades)
        #expect(
            try Self.queuedObjects(db) == [
                "locations/\(uid)/\(upper)0/a.jpg", "locations/\(uid)/shared/a.jpg", "locations/\(uid)/\(upper)%2Fa.jpg",
            ])
    }

    @Test("every write that sets a location's photos sets images_outside_folder; the cascade reads only those rows' URLs")
    func imagesOutsideFolderFollowsWrites() throws {
        let db = try LocifyTestDatabase.create()
        defer { db.drop() }
        let (caller, category, location) = try Self.callerWithCategory(db)
        let uid = caller.userID
        let inside = "https://firebasestorage.googleapis.com/v0/b/\(TestConstants.bucket)/o/locations%2F\(uid)%2F\(location.uuidString)%2Fa.jpg"
        let shared = "https://firebasestorage.googleapis.com/v0/b/\(TestConstants.bucket)/o/locations%2F\(uid)%2Fshared%2Fb.jpg"
        func flag() throws -> Bool {
            try db.pool.withConnection { connection in
                try #require(
                    try connection.query("SELECT images_outside_folder FROM locations WHERE user_id = \(uid) AND id = \(location)").first
                ).decode(0, as: Bool.self)
            }
        }
        func draft(_ urls: [String], _ name: String) throws -> LocationDraft {
            try LocationDraft(id: location, categoryID: category, name: name, latitude: 1, longitude: 1, imageURLs: urls)
        }
        _ = try db.services.locations.create(caller, try draft([inside], "a"))
        #expect(try !flag())
        _ = try db.services.locations.replace(caller, try draft([inside, shared], "b"))
        #expect(try flag())
        _ = try db.services.locations.replace(caller, try draft([inside], "c"))
        #expect(try !flag())
        _ = try db.services.locations.replace(caller, try draft([shared], "d"))
        #expect(try flag())
        // The cascade queues the folder, and the shared object because this row is flagged.
        _ = try db.services.categories.delete(caller, id: category, updatedAt: nil, reassignTo: nil)
        CascadeWorker(pool: db.pool, cascades: db.services.cascades, logger: TestDatabase.logger).settleNow()  // the batches queue the locations' clean-up (PendingCascades)
        #expect(try Self.queuedObjects(db) == ["locations/\(uid)/shared/b.jpg"])
    }

    @Test("a cascade of 300 locations, each with two objects outside its folder, queues 2 jobs per folder and 1 per 100 objects")
    func cascadeJobCount() throws {
        let db = try LocifyTestDatabase.create()
        defer { db.drop() }
        let caller = TestConstants.newCaller()
        let uid = caller.userID
        let category = UUID()
        _ = try db.services.categories.create(caller, CategoryDraft(id: category, name: "Big"))
        for index in 0..<300 {
            let urls = (0..<2).map {
                "https://firebasestorage.googleapis.com/v0/b/\(TestConstants.bucket)/o/locations%2F\(uid)%2Fshared%2F\(index)-\($0).jpg"
            }
            _ = try db.services.locations.create(
                caller, LocationDraft(id: UUID(), categoryID: category, name: "L\(index)", latitude: 1, longitude: 1, imageURLs: urls))
        }
        _ = try db.services.categories.delete(caller, id: category, updatedAt: nil, reassignTo: nil)
        CascadeWorker(pool: db.pool, cascades: db.services.cascades, logger: TestDatabase.logger).settleNow()  // the batches queue the locations' clean-up (PendingCascades)
        let counts: [String: Int64] = try db.pool.withConnection { connection in
            var counts: [String: Int64] = [:]
            for row in try connection.query("SELECT kind, count(*) FROM cleanup_jobs GROUP BY kind") {
                counts[try row.decode(0)] = try row.decode(1)
            }
            return counts
        }
        // The category's two folders with the delete; the locations' 600 folders and 600 objects with the batch that hid them.
        #expect(
            counts == ["storage_prefix": 2, "storage_prefixes": 30, "storage_objects": 6], "before: 602 storage_prefix and 600 storage_object jobs")
    }

    @Test("a storage_objects job deletes each of its paths; a name that cannot exist is skipped and counted, the others run")
    func batchJobRuns() throws {
        let db = try LocifyTestDatabase.create()
        defer { db.drop() }
        let batch = ["locations/u/s/1.jpg", "locations/u/s/2\u{7F}.jpg", "locations/u/s/3.jpg"]
        try db.pool.withTransaction { connection in
            try connection.query(
                "INSERT INTO cleanup_jobs (user_id, kind, target) VALUES ('u', 'storage_objects', \(batch.joined(separator: "\n")))")
        }
        let executor = CleanupScriptedExecutor()
        let (worker, pool) = Self.worker(db, executor)
        defer { pool.close() }
        #expect(worker.runDueJobs() == 1)
        #expect(executor.calls == [.init(kind: .storageObject, target: batch[0]), .init(kind: .storageObject, target: batch[2])])
        try db.pool.withTransaction { connection in
            try connection.query("INSERT INTO cleanup_jobs (user_id, kind, target) VALUES ('u', 'storage_prefixes', 'locations/u/a/\nlocations/u/b/')")
        }
        #expect(worker.runDueJobs() == 1)
        #expect(executor.calls.suffix(2) == [.init(kind: .storagePrefix, target: "locations/u/a/"), .init(kind: .storagePrefix, target: "locations/u/b/")])
        let left: Int64 = try db.pool.withConnection { connection in
            try connection.query("SELECT count(*) FROM cleanup_jobs").first?.decode(0) ?? -1
        }
        #expect(left == 0)
    }
}

/// The counters after a category's deletion hides its locations or shows them in another category
/// (`LocationStore.follow`): right, and with one update of each category row involved instead of
/// one per location (the per-row trigger made a 20,000-location cascade take 41 s, RELIABILITY.md).
@Suite("Counters: a category's deletion, its locations all at once")
struct BulkCountersTests {
    static func counters(_ db: LocifyTestDatabase, _ userID: String, _ id: UUID) throws -> [Int64] {
        try db.pool.withConnection { connection in
            guard
                let row = try connection.query(
                    "SELECT location_count, favorite_count FROM categories WHERE user_id = \(userID) AND id = \(id)"
                ).first
            else { return [] }
            return [try row.decode(0), try row.decode(1)]
        }
    }

    /// How many category rows `body` updates, counted by PostgreSQL in the transaction it runs in
    /// (the difference of the backend's pending count before and after).
    static func categoryRowUpdates(_ db: LocifyTestDatabase, _ body: (PostgresConnection) throws -> Void) throws -> Int64 {
        try db.pool.withTransaction { connection in
            let count: PostgresQuery = "SELECT pg_stat_get_xact_tuples_updated('categories'::regclass)"
            let before: Int64 = try connection.query(count).first?.decode(0) ?? -1
            try body(connection)
            return (try connection.query(count).first?.decode(0) ?? -1) - before
        }
    }

    /// Deletes `category` as the service does (tombstone, reassign target, then the locations
    /// follow), counting the category rows it updates.
    static func deleteCounting(_ db: LocifyTestDatabase, _ userID: String, _ category: UUID, reassignTo: UUID?) throws -> Int64 {
        try categoryRowUpdates(db) { connection in
            try connection.query("UPDATE categories SET deleted_at = now() WHERE user_id = \(userID) AND id = \(category)")
            try CategoryStore.setReassignTarget(connection, userID: userID, id: category, target: reassignTo)
            _ = try LocationStore.follow(connection, userID: userID, category: category, stamp: 1)
        }
    }

    static func fill(_ db: LocifyTestDatabase, _ caller: Caller, _ category: UUID, count: Int) throws {
        for index in 0..<count {
            _ = try db.services.locations.create(
                caller,
                LocationDraft(id: UUID(), categoryID: category, name: "L\(index)", latitude: 1, longitude: 1, isFavorite: index % 3 == 0))
        }
    }

    @Test("a cascade of 1,000 locations updates the category row a few times, not once per location; its counters end at zero")
    func cascadeUpdatesTheCategoryOnce() throws {
        let db = try LocifyTestDatabase.create()
        defer { db.drop() }
        let caller = TestConstants.newCaller()
        let category = UUID()
        _ = try db.services.categories.create(caller, CategoryDraft(id: category, name: "Big"))
        try Self.fill(db, caller, category, count: 1000)
        #expect(try Self.counters(db, caller.userID, category) == [1000, 334])
        let updates = try Self.deleteCounting(db, caller.userID, category, reassignTo: nil)
        #expect(updates <= 3, "before: one update of the category row per location (1,000 more)")
        #expect(try Self.counters(db, caller.userID, category) == [0, 0])
    }

    @Test("a reassign moves the counts to the target with one update of each row; a revival brings them back")
    func moveCounts() throws {
        let db = try LocifyTestDatabase.create()
        defer { db.drop() }
        let caller = TestConstants.newCaller()
        let source = UUID()
        let target = UUID()
        _ = try db.services.categories.create(caller, CategoryDraft(id: source, name: "Source"))
        _ = try db.services.categories.create(caller, CategoryDraft(id: target, name: "Target"))
        try Self.fill(db, caller, source, count: 300)
        try Self.fill(db, caller, target, count: 4)
        let updates = try Self.deleteCounting(db, caller.userID, source, reassignTo: target)
        #expect(updates <= 4, "before: two updates of category rows per location (600 more)")
        #expect(try Self.counters(db, caller.userID, source) == [0, 0])
        #expect(try Self.counters(db, caller.userID, target) == [304, 102])
        // Through the services: deleting the target in turn with a cascade, then reviving the source.
        _ = try db.services.categories.delete(caller, id: target, updatedAt: nil, reassignTo: nil)
        CascadeWorker(pool: db.pool, cascades: db.services.cascades, logger: TestDatabase.logger).settleNow()  // the cascade's locations go (PendingCascades)
        #expect(try Self.counters(db, caller.userID, target) == [0, 0])
        _ = try db.services.categories.replace(caller, CategoryDraft(id: source, name: "Source again"))
        #expect(try Self.counters(db, caller.userID, source) == [300, 100])
    }

    @Test("the recount refuses a deleted category left with live locations (LC001), as the trigger does")
    func recountRefusesDeletedCategoryWithLocations() throws {
        let db = try LocifyTestDatabase.create()
        defer { db.drop() }
        let caller = TestConstants.newCaller()
        let category = UUID()
        _ = try db.services.categories.create(caller, CategoryDraft(id: category, name: "C"))
        try Self.fill(db, caller, category, count: 3)
        #expect {
            try db.pool.withTransaction { connection in
                try connection.query("UPDATE categories SET deleted_at = now() WHERE user_id = \(caller.userID) AND id = \(category)")
                try connection.query("SELECT locify_recount_location_counters(\(caller.userID), \([category]))")
            }
        } throws: { error in
            (error as? PostgresError)?.sqlState == "LC001"
        }
        #expect(try Self.counters(db, caller.userID, category) == [3, 1])
    }
}
