import Foundation
import Locify
import LocifyJobs
import LocifyRules
import Postgres
import Primitives
import Synchronization
import Testing
import TestSupport
import TestSupportDatabase

/// Issue 23, item 3: a cascade answers before its locations are turned into tombstones
/// (`PendingCascades`, migrations/0008). Until they are, every read must already show them
/// deleted, and settling them (by a write or by the worker) must change nothing anyone can read.
@Suite("Pending cascades: answered at once, read as done, settled later")
struct PendingCascadeTests {
    /// A user with a category `doomed` of 30 locations and a category `kept` of 5.
    struct Fixture {
        let db: LocifyTestDatabase
        let caller = TestConstants.newCaller()
        let doomed = UUID()
        let kept = UUID()
        var doomedLocations: [UUID] = []

        init(in database: LocifyTestDatabase? = nil) throws {
            db = try database ?? LocifyTestDatabase.create()
            _ = try db.services.categories.create(caller, CategoryDraft(id: doomed, name: "Doomed"))
            _ = try db.services.categories.create(caller, CategoryDraft(id: kept, name: "Kept"))
            for index in 0..<30 { doomedLocations.append(try add("Doomed place \(index)", in: doomed)) }
            for index in 0..<5 { _ = try add("Kept place \(index)", in: kept) }
        }

        func add(_ name: String, in category: UUID) throws -> UUID {
            let id = UUID()
            _ = try db.services.locations.create(
                caller, LocationDraft(id: id, categoryID: category, name: name, latitude: 1, longitude: 2))
            return id
        }

        func cascade() throws {
            _ = try db.services.categories.delete(caller, id: doomed, updatedAt: nil, reassignTo: nil)
        }

        /// The user's pending cascades, as stored.
        func pending() throws -> [String] {
            try db.pool.withConnection { connection in
                try connection.query("SELECT hiding::text[] FROM users WHERE id = \(caller.userID)").first?.decode(0, as: [String].self)
            } ?? []
        }

        /// Rows of `doomed` still stored live.
        func liveRowsInDoomed() throws -> Int64 {
            try db.pool.withConnection { connection in
                try connection.query(
                    "SELECT count(*) FROM locations WHERE user_id = \(caller.userID) AND category_id = \(doomed) AND deleted_at IS NULL"
                ).first?.decode(0) ?? -1
            }
        }

        /// What every listing shows: ids and total, for each filter that could reveal `doomed`.
        func listings() throws -> [[String]] {
            let queries = [
                LocationQuery(page: PageRequest(size: 100)),
                LocationQuery(page: PageRequest(size: 100), sort: .name),
                LocationQuery(page: PageRequest(size: 100), sort: .updatedAt),
                LocationQuery(page: PageRequest(size: 100), isFavorite: false),
                LocationQuery(page: PageRequest(size: 100), categoryID: doomed),
                LocationQuery(page: PageRequest(size: 100), search: "place"),
                LocationQuery(page: PageRequest(size: 100), search: "doomed"),
            ]
            return try queries.map { query in
                let page = try db.services.locations.list(caller, query)
                return ["total \(page.totalCount)"] + page.records.map(\.name)
            }
        }

        /// The feed from `cursor` on, page by page (`limit` changes each).
        func pages(from cursor: SyncCursor?, limit: Int) throws -> [(changes: [RecordState], cursor: SyncCursor)] {
            var pages: [(changes: [RecordState], cursor: SyncCursor)] = []
            var cursor = cursor
            while true {
                let page = try db.services.sync.pull(caller, since: cursor, limit: limit)
                pages.append((page.changes, page.cursor))
                cursor = page.cursor
                if !page.hasMore { return pages }
            }
        }

        func caughtUpCursor() throws -> SyncCursor {
            try pages(from: nil, limit: 1000).last!.cursor
        }
    }

    @Test("a cascade answers with its locations untouched; listings, reads by id, searches and the feed already show them deleted")
    func readsBeforeSettling() throws {
        let fixture = try Fixture()
        defer { fixture.db.drop() }
        let before = try fixture.caughtUpCursor()
        let keptListings = try fixture.listings()
        try fixture.cascade()
        #expect(try fixture.liveRowsInDoomed() == 30, "the delete hid nothing itself")
        #expect(try fixture.pending() == [fixture.doomed.uuidString.lowercased()])

        let listings = try fixture.listings()
        let kept = Set((0..<5).map { "Kept place \($0)" })
        for (index, listing) in listings.enumerated() where index != 4 && index != 6 {
            #expect(listing.first == "total 5" && Set(listing.dropFirst()) == kept, "listing \(index)")
        }
        #expect(listings[4] == ["total 0"], "the deleted category lists nothing")
        #expect(listings[6] == ["total 0"], "a search finds and counts none of its places")
        #expect(keptListings[0].first == "total 35")
        for id in fixture.doomedLocations {
            #expect(throws: LocifyError.notFound(.location)) { try fixture.db.services.locations.get(fixture.caller, id: id) }
        }

        // The feed: the category's tombstone, then each location's, at its stamp, across pages.
        let pages = try fixture.pages(from: before, limit: 7)
        let changes = pages.flatMap(\.changes)
        let doomedSorted = fixture.doomedLocations.sorted { $0.precedesBytewise($1) }
        #expect(changes.map(\.id) == [fixture.doomed] + doomedSorted)
        #expect(changes.allSatisfy { if case .tombstone = $0 { true } else { false } })
        // A snapshot taken now has none of them.
        let snapshot = try fixture.pages(from: nil, limit: 1000).flatMap(\.changes).map(\.id)
        #expect(Set(snapshot).isDisjoint(with: fixture.doomedLocations + [fixture.doomed]))
        let liveCategories = try fixture.db.services.categories.list(fixture.caller, PageRequest(size: 100)).totalCount
        #expect(Int64(snapshot.count) == liveCategories + 5)

        // Settling changes nothing a reader sees, and a cursor taken mid-way goes on where it was.
        let worker = CascadeWorker(pool: fixture.db.pool, cascades: fixture.db.services.cascades, logger: TestDatabase.logger)
        #expect(worker.settleNow() == 1)
        #expect(worker.settleNow() == 0)
        #expect(try fixture.liveRowsInDoomed() == 0)
        #expect(try fixture.pending().isEmpty)
        #expect(try fixture.listings() == listings)
        let settledPages = try fixture.pages(from: before, limit: 7)
        #expect(settledPages.map(\.changes) == pages.map(\.changes))
        #expect(try fixture.pages(from: pages[1].cursor, limit: 7).flatMap(\.changes) == Array(changes.dropFirst(14)))
        #expect(try fixture.pages(from: nil, limit: 1000).flatMap(\.changes).map(\.id) == snapshot)
        // Each hidden row carries the stamp of the category's tombstone, as the delete would have.
        let stamps = try fixture.db.pool.withConnection { connection in
            try connection.query(
                """
                SELECT count(DISTINCT l.change_seq) FROM locations l JOIN categories c ON c.user_id = l.user_id AND c.id = l.category_id
                WHERE l.user_id = \(fixture.caller.userID) AND c.id = \(fixture.doomed) AND l.change_seq = c.change_seq AND l.hidden
                """
            ).first?.decode(0, as: Int64.self)
        }
        #expect(stamps == 1)
    }

    @Test("a write settles no cascade ahead (it waits at most on the worker's batch); a location it touches is hidden first")
    func writeSettlesOnlyWhatItTouches() throws {
        let fixture = try Fixture()
        defer { fixture.db.drop() }
        let before = try fixture.caughtUpCursor()
        try fixture.cascade()
        let listings = try fixture.listings()
        let feed = try fixture.pages(from: before, limit: 1000).flatMap(\.changes)
        _ = try fixture.db.services.categories.replace(fixture.caller, CategoryDraft(id: fixture.kept, name: "Kept"))
        #expect(try fixture.liveRowsInDoomed() == 30, "the write hid none of the cascade's locations")
        #expect(try fixture.pending() == [fixture.doomed.uuidString.lowercased()])

        // A phone that never saw the delete edits one of the doomed places, as it would had the
        // cascade been settled: refused (its category is gone); then deletes another: only that
        // row is written.
        let edited = fixture.doomedLocations[3]
        #expect(throws: LocifyError.notFound(.category)) {
            _ = try fixture.db.services.locations.replace(
                fixture.caller,
                LocationDraft(id: edited, categoryID: fixture.doomed, name: "Edited offline", latitude: 1, longitude: 2))
        }
        _ = try fixture.db.services.locations.delete(fixture.caller, id: edited, updatedAt: nil)
        #expect(try fixture.liveRowsInDoomed() == 29)
        #expect(throws: LocifyError.notFound(.location)) { try fixture.db.services.locations.get(fixture.caller, id: edited) }
        #expect(try fixture.listings() == listings)
        let after = try fixture.pages(from: before, limit: 1000).flatMap(\.changes)
        // The feed still has each doomed place once (beside the category written since).
        #expect(Set(after.map(\.id)).subtracting([fixture.kept]) == Set(feed.map(\.id)) && Set(after.map(\.id)).count == after.count)

        #expect(CascadeWorker(pool: fixture.db.pool, cascades: fixture.db.services.cascades, logger: TestDatabase.logger).settleNow() == 1)
        #expect(try fixture.liveRowsInDoomed() == 0)
        #expect(try fixture.listings() == listings)
    }

    @Test("a cascade bigger than a batch settles over several transactions; reads and the feed stay the same mid-way")
    func settlesInBatches() throws {
        let fixture = try Fixture()
        defer { fixture.db.drop() }
        let before = try fixture.caughtUpCursor()
        try fixture.cascade()
        let listings = try fixture.listings()
        let feed = try fixture.pages(from: before, limit: 7).flatMap(\.changes)
        // Each batch starts where the previous one left off, as the worker's do.
        var position: SettlingPosition?
        let settleOneBatch = {
            position = try fixture.db.pool.withTransaction { connection in
                try fixture.db.services.cascades.settleBatch(connection, userID: fixture.caller.userID, limit: 7, after: position)
            }.position
        }
        // A phone pulls 5 changes at a time while batches of 7 commit between its pages.
        var cursor = before
        var pulled: [RecordState] = []
        var batches = 0
        var live: [Int64] = []
        while true {
            let page = try fixture.db.services.sync.pull(fixture.caller, since: cursor, limit: 5)
            pulled += page.changes
            cursor = page.cursor
            if try !fixture.pending().isEmpty {
                try settleOneBatch()
                batches += 1
                live.append(try fixture.liveRowsInDoomed())
                #expect(try fixture.listings() == listings, "after batch \(batches)")
            }
            if !page.hasMore { break }
        }
        #expect(pulled == feed, "a cursor taken mid-way reads on with no gap and no repeat")
        #expect(Array(live.prefix(4)) == [23, 16, 9, 2])
        while try !fixture.pending().isEmpty { try settleOneBatch() }
        #expect(try fixture.liveRowsInDoomed() == 0)
        #expect(try fixture.pages(from: before, limit: 7).flatMap(\.changes) == feed)
        #expect(try fixture.listings() == listings)
        // The category's counters dropped with each batch to what a recount finds.
        let counters = {
            try fixture.db.pool.withConnection { connection in
                try connection.query(
                    "SELECT location_count, favorite_count FROM categories WHERE user_id = \(fixture.caller.userID) AND id = \(fixture.doomed)"
                ).first.map { [try $0.decode(0, as: Int64.self), try $0.decode(1, as: Int64.self)] }
            }
        }
        #expect(try counters() == [0, 0])
        try fixture.db.pool.withConnection { connection in
            try connection.query("SELECT locify_recount_location_counters(\(fixture.caller.userID), \([fixture.doomed]))")
        }
        #expect(try counters() == [0, 0])
    }

    /// What PostgreSQL's statistics say `body` did on the pool's one connection: rows of
    /// `locations` read (by sequential scans, and entries read from its indexes) and written, and
    /// clean-up jobs inserted. The connection's pending statistics are flushed before and after
    /// (`pg_stat_force_next_flush` flushes them as the statement ends, before it answers).
    static func work(_ db: LocifyTestDatabase, _ body: () throws -> Void) throws -> (locationsRead: Int64, locationsWritten: Int64, jobs: Int64) {
        let read = {
            try db.pool.withConnection { connection in
                try connection.query("SELECT pg_stat_force_next_flush()")
                let row = try connection.query(
                    """
                    SELECT t.seq_tup_read + (SELECT COALESCE(sum(i.idx_tup_read), 0)::bigint FROM pg_stat_user_indexes i
                                             WHERE i.relid = t.relid),
                           t.n_tup_upd + t.n_tup_ins, (SELECT n_tup_ins FROM pg_stat_user_tables WHERE relname = 'cleanup_jobs')
                    FROM pg_stat_user_tables t WHERE t.relname = 'locations'
                    """
                ).first
                return [try row?.decode(0, as: Int64.self) ?? -1, try row?.decode(1, as: Int64.self) ?? -1, try row?.decode(2, as: Int64.self) ?? -1]
            }
        }
        let before = try read()
        try body()
        let after = try read()
        return (after[0] - before[0], after[1] - before[1], after[2] - before[2])
    }

    /// Every Storage path the user's queued clean-up jobs name, with how many times each is named.
    static func queuedTargets(_ db: LocifyTestDatabase, _ userID: String) throws -> [String: Int] {
        let jobs = try db.pool.withConnection { connection in
            try connection.query("SELECT kind, target FROM cleanup_jobs WHERE user_id = \(userID)").map { row in
                (try row.decode(0, as: String.self), try row.decode(1, as: String.self))
            }
        }
        var targets: [String: Int] = [:]
        for (kind, target) in jobs {
            for path in CleanupJob.targets(of: target, kind: CleanupJob.Kind(rawValue: kind)) { targets[path, default: 0] += 1 }
        }
        return targets
    }

    @Test(
        "a cascade's delete reads and queues nothing per location; each location's clean-up is queued once, by whatever hides it"
    )
    func deleteDoesNotGrowWithTheCategory() throws {
        let db = try LocifyTestDatabase.create(poolSize: 1)
        defer { db.drop() }
        let caller = TestConstants.newCaller()
        let uid = caller.userID
        let (big, other) = (UUID(), UUID())
        _ = try db.services.categories.create(caller, CategoryDraft(id: big, name: "Big"))
        _ = try db.services.categories.create(caller, CategoryDraft(id: other, name: "Other"))
        let object = "https://firebasestorage.googleapis.com/v0/b/\(TestConstants.bucket)/o/"
        var expected: [String: Int] = [:]
        // Each folder in both spellings of its id (iOS names folders with upper-case ids).
        let folders = { (folder: UserStorageFolder, id: UUID) in
            for spelling in [id.uuidString.lowercased(), id.uuidString] { expected[folder.prefix(uid: uid, record: spelling)] = 1 }
        }
        folders(.categories, big)
        folders(.categories, other)
        // Big's locations first in the table, so that finding one reads one row whatever the plan.
        var bigLocations: [UUID] = []
        for (category, count) in [(big, 200), (other, 5)] {
            for index in 0..<count {
                let id = UUID()
                // Some photos: one in the location's own folder (its folder's job covers it), one
                // elsewhere in the user's folders (a job of its own), one in the category's folder
                // (the category's job, queued by the delete, covers it).
                let images =
                    index % 50 == 0
                    ? [
                        "\(object)locations%2F\(uid)%2F\(id.uuidString)%2Fown.jpg", "\(object)locations%2F\(uid)%2Fshared%2F\(id.uuidString).jpg",
                        "\(object)categories%2F\(uid)%2F\(category.uuidString.lowercased())%2F\(index).jpg",
                    ] : []
                _ = try db.services.locations.create(
                    caller, LocationDraft(id: id, categoryID: category, name: "P\(index)", latitude: 1, longitude: 2, imageURLs: images))
                if category == big { bigLocations.append(id) }
                folders(.locations, id)
                if !images.isEmpty { expected["locations/\(uid)/shared/\(id.uuidString).jpg"] = 1 }
            }
        }

        let delete = try Self.work(db) { _ = try db.services.categories.delete(caller, id: big, updatedAt: nil, reassignTo: nil) }
        #expect(delete.locationsRead <= 10, "before: every one of the 200 locations was read")
        #expect(delete.locationsWritten == 0)
        #expect(delete.jobs == 2, "the category's own folder, in both spellings; before: 22 jobs for the locations' folders and photos")
        #expect(try Self.queuedTargets(db, uid).keys.allSatisfy { $0.hasPrefix("categories/") })

        // A write hides the location it touches (its clean-up with it), batches settle some, a
        // write to the other cascade's tombstone settles that cascade whole, the worker the rest.
        _ = try db.services.locations.delete(caller, id: bigLocations[0], updatedAt: nil)
        for _ in 0..<3 {
            _ = try db.pool.withTransaction { connection in try db.services.cascades.settleBatch(connection, userID: uid, limit: 7) }
        }
        _ = try db.services.categories.delete(caller, id: other, updatedAt: nil, reassignTo: nil)
        _ = try db.services.categories.delete(caller, id: other, updatedAt: nil, reassignTo: nil)
        #expect(CascadeWorker(pool: db.pool, cascades: db.services.cascades, logger: TestDatabase.logger).settleNow() == 1)
        let live = try db.pool.withConnection { connection in
            try connection.query("SELECT count(*) FROM locations WHERE user_id = \(uid) AND deleted_at IS NULL").first?.decode(0, as: Int64.self)
        }
        #expect(live == 0)
        #expect(try Self.queuedTargets(db, uid) == expected)
    }

    @Test("a batch resumes only its own cascade: the category brought back and deleted again settles whole, whatever position was kept")
    func positionOfAnEarlierCascadeIsIgnored() throws {
        let fixture = try Fixture()
        defer { fixture.db.drop() }
        let batch = { (after: SettlingPosition?) in
            try fixture.db.pool.withTransaction { connection in
                try fixture.db.services.cascades.settleBatch(connection, userID: fixture.caller.userID, limit: 7, after: after)
            }
        }
        try fixture.cascade()
        let first = try batch(nil)
        #expect(try fixture.liveRowsInDoomed() == 23 && first.position != nil)
        // Brought back (its 30 places with it), then deleted again: a new cascade of the same category.
        _ = try fixture.db.services.categories.replace(fixture.caller, CategoryDraft(id: fixture.doomed, name: "Back"))
        #expect(try fixture.liveRowsInDoomed() == 30)
        try fixture.cascade()
        var position = first.position
        var batches = 0
        while try !fixture.pending().isEmpty && batches < 10 {
            position = try batch(position).position
            batches += 1
        }
        #expect(try fixture.liveRowsInDoomed() == 0, "the 7 places before the old position were hidden too")
        #expect(try fixture.listings()[0].first == "total 5")
    }

    @Test("a user whose settling fails backs off while another user's cascade settles; the oldest cascade goes first")
    func failingUserBacksOff() throws {
        let failing = try Fixture()
        defer { failing.db.drop() }
        let other = try Fixture(in: failing.db)
        try failing.cascade()
        try other.cascade()
        // Every batch of the failing user fails, as a statement timeout would cancel it.
        try failing.db.pool.withConnection { connection in
            try connection.execute(
                unsafeSQL: """
                    CREATE FUNCTION test_fail_settling() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN
                        IF NEW.user_id = '\(failing.caller.userID)' AND NEW.hidden THEN RAISE EXCEPTION 'injected'; END IF;
                        RETURN NEW;
                    END $$;
                    CREATE TRIGGER test_fail_settling BEFORE UPDATE ON locations FOR EACH ROW EXECUTE FUNCTION test_fail_settling();
                    """)
        }
        let time = Mutex(Duration.seconds(100))
        let worker = CascadeWorker(
            pool: failing.db.pool, cascades: failing.db.services.cascades, batchSize: 7, retryDelay: .seconds(10), clock: MonotonicClock { time.withLock { $0 } },
            logger: TestDatabase.logger)
        #expect(worker.settleNow() == 1)
        #expect(try other.pending().isEmpty && other.liveRowsInDoomed() == 0)
        #expect(try failing.liveRowsInDoomed() == 30)
        // Still backing off: not tried again.
        time.withLock { $0 += .seconds(5) }
        #expect(worker.settleNow() == 0)
        try failing.db.pool.withConnection { connection in try connection.execute(unsafeSQL: "DROP TRIGGER test_fail_settling ON locations") }
        #expect(worker.settleNow() == 0, "backing off")
        time.withLock { $0 += .seconds(6) }
        #expect(worker.settleNow() == 1)
        #expect(try failing.pending().isEmpty && failing.liveRowsInDoomed() == 0)
    }

    @Test(
        "a write to a category tombstone settles only what it brings back or moves; every read stays what a settled cascade shows"
    )
    func categoryTombstoneWriteSettlesOnlyItsOwn() throws {
        let fixture = try Fixture()
        defer { fixture.db.drop() }
        let (caller, services) = (fixture.caller, fixture.db.services)
        // `moved`'s 4 places are shown in `doomed` by a reassign when `doomed` is deleted; `spare`,
        // empty, is a tombstone before.
        let (moved, spare) = (UUID(), UUID())
        _ = try services.categories.create(caller, CategoryDraft(id: moved, name: "Moved"))
        _ = try services.categories.create(caller, CategoryDraft(id: spare, name: "Spare"))
        let movedLocations = try (0..<4).map { try fixture.add("Moved place \($0)", in: moved) }
        _ = try services.categories.delete(caller, id: moved, updatedAt: nil, reassignTo: fixture.doomed)
        _ = try services.categories.delete(caller, id: spare, updatedAt: nil, reassignTo: nil)
        let before = try fixture.caughtUpCursor()
        try fixture.cascade()
        #expect(try fixture.liveRowsInDoomed() == 34)
        // A phone starts pulling the cascade's tombstones.
        let phoneFirst = try services.sync.pull(caller, since: before, limit: 5)
        let listings = try fixture.listings()

        // Brought back, deleted, deleted again: nothing of the pending cascade is settled (before:
        // all 34 places were hidden in the request), and no read changes.
        _ = try services.categories.replace(caller, CategoryDraft(id: spare, name: "Spare back"))
        #expect(try fixture.liveRowsInDoomed() == 34, "bringing back another category settled nothing")
        _ = try services.categories.delete(caller, id: spare, updatedAt: nil, reassignTo: nil)
        _ = try services.categories.delete(caller, id: spare, updatedAt: nil, reassignTo: nil)
        #expect(try fixture.liveRowsInDoomed() == 34, "deleting a tombstone again settled nothing")
        #expect(try fixture.pending() == [fixture.doomed.uuidString.lowercased()])
        #expect(try fixture.listings() == listings)

        // Bringing `moved` back settles only its own 4 places, which come back with it; the 30
        // others stay with the worker.
        _ = try services.categories.replace(caller, CategoryDraft(id: moved, name: "Moved back"))
        #expect(try fixture.liveRowsInDoomed() == 30)
        #expect(try fixture.pending() == [fixture.doomed.uuidString.lowercased()])
        for id in movedLocations {
            let location = try services.locations.get(caller, id: id)
            #expect(location.categoryID == moved && location.version == 4, "created, reassigned, hidden, back")
        }
        let added = try fixture.add("New in moved", in: moved)
        #expect(try services.locations.get(caller, id: added).categoryID == moved)
        for id in fixture.doomedLocations {
            #expect(throws: LocifyError.notFound(.location)) { try services.locations.get(caller, id: id) }
        }
        let movedListing = {
            let page = try services.locations.list(caller, LocationQuery(page: PageRequest(size: 100), categoryID: moved))
            return ["total \(page.totalCount)"] + page.records.map(\.name).sorted()
        }
        #expect(try movedListing() == ["total 5", "Moved place 0", "Moved place 1", "Moved place 2", "Moved place 3", "New in moved"])
        let pendingListings = try fixture.listings()
        #expect(pendingListings[0].first == "total 10" && pendingListings[4] == ["total 0"])
        let pendingFeed = try fixture.pages(from: before, limit: 7).flatMap(\.changes)
        let phoneRest = try fixture.pages(from: phoneFirst.cursor, limit: 5).flatMap(\.changes)

        // The worker settles the rest: every read, the feed from any cursor included, is unchanged.
        let worker = CascadeWorker(pool: fixture.db.pool, cascades: services.cascades, logger: TestDatabase.logger)
        #expect(worker.settleNow() == 1)
        #expect(try fixture.liveRowsInDoomed() == 0 && fixture.pending().isEmpty)
        #expect(try fixture.listings() == pendingListings)
        #expect(try movedListing()[0] == "total 5")
        #expect(try fixture.pages(from: before, limit: 7).flatMap(\.changes) == pendingFeed)
        #expect(try fixture.pages(from: phoneFirst.cursor, limit: 5).flatMap(\.changes) == phoneRest)
        // The phone that pulled across the writes holds live what the server changed since and holds live.
        var phone: [UUID: RecordState] = [:]
        for change in phoneFirst.changes + phoneRest {
            if case .tombstone = change { phone[change.id] = nil } else { phone[change.id] = change }
        }
        let server = try fixture.pages(from: before, limit: 1000).flatMap(\.changes).filter { if case .tombstone = $0 { false } else { true } }
        #expect(Set(phone.keys) == Set(server.map(\.id)))
        #expect(Set(movedLocations + [added]).isSubset(of: phone.keys))
        // The counters end at what a recount finds.
        let categories = [fixture.doomed, fixture.kept, moved, spare]
        let counters = {
            try fixture.db.pool.withConnection { connection in
                try connection.query(
                    """
                    SELECT location_count, favorite_count FROM categories WHERE user_id = \(caller.userID) AND id = ANY (\(categories))
                    ORDER BY id
                    """
                ).map { [try $0.decode(0, as: Int64.self), try $0.decode(1, as: Int64.self)] }
            }
        }
        let maintained = try counters()
        try fixture.db.pool.withConnection { connection in
            try connection.query("SELECT locify_recount_location_counters(\(caller.userID), \(categories))")
        }
        #expect(try counters() == maintained)
        #expect(maintained.map(\.[0]).reduce(0, +) == 10)
    }

    @Test("deleting again a category reassigned into a pending cascade moves only its own places, as a settled cascade would")
    func deleteAgainIntoAnotherCategory() throws {
        let fixture = try Fixture()
        defer { fixture.db.drop() }
        let (caller, services) = (fixture.caller, fixture.db.services)
        // Its writes stamped in the past, so that the newer delete is newer whatever the clock.
        let (moved, written) = (UUID(), Timestamp(milliseconds: 1_767_225_600_000))
        _ = try services.categories.create(caller, CategoryDraft(id: moved, name: "Moved", updatedAt: written))
        let movedLocations = try (0..<4).map { try fixture.add("Moved place \($0)", in: moved) }
        _ = try services.categories.delete(caller, id: moved, updatedAt: written.adding(milliseconds: 1), reassignTo: fixture.doomed)
        let before = try fixture.caughtUpCursor()
        try fixture.cascade()
        // Deleted again, its places now shown in `kept`: only those 4 are settled first.
        _ = try services.categories.delete(caller, id: moved, updatedAt: written.adding(milliseconds: 2), reassignTo: fixture.kept)
        #expect(try fixture.liveRowsInDoomed() == 30, "before: all 34")
        #expect(try fixture.pending() == [fixture.doomed.uuidString.lowercased()])
        for id in movedLocations {
            let location = try services.locations.get(caller, id: id)
            #expect(location.categoryID == fixture.kept && location.version == 4, "created, reassigned, hidden, reassigned")
        }
        let listings = try fixture.listings()
        #expect(listings[0].first == "total 9")
        let feed = try fixture.pages(from: before, limit: 7).flatMap(\.changes)
        #expect(CascadeWorker(pool: fixture.db.pool, cascades: services.cascades, logger: TestDatabase.logger).settleNow() == 1)
        #expect(try fixture.liveRowsInDoomed() == 0)
        #expect(try fixture.listings() == listings)
        #expect(try fixture.pages(from: before, limit: 7).flatMap(\.changes) == feed)
    }

    @Test(
        "deleting the category of a pending cascade again settles nothing: its places stay deleted at the first delete's stamp, however the worker's batches fall"
    )
    func deleteAgainWhilePending() throws {
        let fixture = try Fixture()
        defer { fixture.db.drop() }
        let (caller, services) = (fixture.caller, fixture.db.services)
        let before = try fixture.caughtUpCursor()
        let first = try services.categories.delete(caller, id: fixture.doomed, updatedAt: nil, reassignTo: nil)
        let stampsOfDoomed = { (table: String) in
            try fixture.db.pool.withConnection { connection in
                try connection.query(
                    """
                    SELECT DISTINCT change_seq FROM \(unsafeSQL: table) WHERE user_id = \(caller.userID)
                      AND \(unsafeSQL: table == "categories" ? "id" : "category_id") = \(fixture.doomed)
                    """
                ).map { try $0.decode(0, as: Int64.self) }
            }
        }
        let firstStamp = try #require(try stampsOfDoomed("categories").first)
        // The worker hides 7 of the 30; a phone pulls the start of the cascade's tombstones.
        let batch = try fixture.db.pool.withTransaction { connection in
            try services.cascades.settleBatch(connection, userID: caller.userID, limit: 7)
        }
        #expect(try fixture.liveRowsInDoomed() == 23 && batch.position != nil)
        let phoneFirst = try services.sync.pull(caller, since: before, limit: 5)
        let listings = try fixture.listings()
        let places = Set(fixture.doomedLocations)
        let placeChanges = { (cursor: SyncCursor) in try fixture.pages(from: cursor, limit: 7).flatMap(\.changes).filter { places.contains($0.id) } }
        let feed = try placeChanges(before)
        let phoneRest = try placeChanges(phoneFirst.cursor)
        #expect(feed.count == 30)

        // Another device's newer delete: the tombstone moves to its stamp, and the 23 places still
        // shown stay with the worker (before: all hidden in this request).
        Thread.sleep(forTimeInterval: 0.01)
        let again = try services.categories.delete(caller, id: fixture.doomed, updatedAt: first.updatedAt.adding(milliseconds: 5), reassignTo: nil)
        #expect(again.version == first.version + 1 && again.updatedAt > first.updatedAt)
        #expect(try fixture.liveRowsInDoomed() == 23)
        #expect(try fixture.pending() == [fixture.doomed.uuidString.lowercased()])
        #expect(try fixture.listings() == listings)
        #expect(try placeChanges(before) == feed)
        #expect(try placeChanges(phoneFirst.cursor) == phoneRest, "the phone gets each place's tombstone once")

        // The worker goes on: every place ends a tombstone at the first delete's stamp, and no read changed.
        #expect(CascadeWorker(pool: fixture.db.pool, cascades: services.cascades, logger: TestDatabase.logger).settleNow() == 1)
        #expect(try fixture.liveRowsInDoomed() == 0 && fixture.pending().isEmpty)
        #expect(try stampsOfDoomed("locations") == [firstStamp])
        #expect(try stampsOfDoomed("categories") != [firstStamp])
        #expect(try fixture.listings() == listings)
        #expect(try placeChanges(before) == feed)
        #expect(try placeChanges(phoneFirst.cursor) == phoneRest)
    }

    @Test("deleting the category of a pending cascade again with a reassign settles it and shows its places in the target")
    func reassignWhilePending() throws {
        let fixture = try Fixture()
        defer { fixture.db.drop() }
        let first = try fixture.db.services.categories.delete(fixture.caller, id: fixture.doomed, updatedAt: nil, reassignTo: nil)
        Thread.sleep(forTimeInterval: 0.01)
        _ = try fixture.db.services.categories.delete(
            fixture.caller, id: fixture.doomed, updatedAt: first.updatedAt.adding(milliseconds: 5), reassignTo: fixture.kept)
        #expect(try fixture.pending().isEmpty)
        #expect(try fixture.listings()[0].first == "total 35")
        for id in fixture.doomedLocations {
            let location = try fixture.db.services.locations.get(fixture.caller, id: id)
            #expect(location.categoryID == fixture.kept && location.version == 3, "created, hidden, reassigned")
        }
    }

    @Test(
        "deleting again with a cascade a category reassigned into a pending cascade settles nothing; the worker hides its places under it, at the cascade's stamp"
    )
    func deleteAgainWithCascadeIntoPending() throws {
        let fixture = try Fixture()
        defer { fixture.db.drop() }
        let (caller, services) = (fixture.caller, fixture.db.services)
        // Its writes stamped in the past, so that the newer delete is newer whatever the clock.
        let (moved, written) = (UUID(), Timestamp(milliseconds: 1_767_225_600_000))
        _ = try services.categories.create(caller, CategoryDraft(id: moved, name: "Moved", updatedAt: written))
        let movedLocations = Set(try (0..<4).map { try fixture.add("Moved place \($0)", in: moved) })
        _ = try services.categories.delete(caller, id: moved, updatedAt: written.adding(milliseconds: 1), reassignTo: fixture.doomed)
        let before = try fixture.caughtUpCursor()
        try fixture.cascade()
        let listings = try fixture.listings()
        let feed = try fixture.pages(from: before, limit: 7).flatMap(\.changes).filter { movedLocations.contains($0.id) }
        #expect(feed.count == 4)

        _ = try services.categories.delete(caller, id: moved, updatedAt: written.adding(milliseconds: 2), reassignTo: nil)
        #expect(try fixture.liveRowsInDoomed() == 34, "before: its 4 places were hidden in the request")
        #expect(try fixture.listings() == listings)
        let movedFeed = { try fixture.pages(from: before, limit: 7).flatMap(\.changes).filter { movedLocations.contains($0.id) } }
        #expect(try movedFeed() == feed)

        #expect(CascadeWorker(pool: fixture.db.pool, cascades: services.cascades, logger: TestDatabase.logger).settleNow() == 1)
        #expect(try fixture.liveRowsInDoomed() == 0 && fixture.pending().isEmpty)
        #expect(try movedFeed() == feed)
        let rows = try fixture.db.pool.withConnection { connection in
            try connection.query(
                """
                SELECT DISTINCT l.category_id, l.hidden, l.change_seq = c.change_seq FROM locations l
                JOIN categories c ON c.user_id = l.user_id AND c.id = \(fixture.doomed)
                WHERE l.user_id = \(caller.userID) AND l.id = ANY (\(Array(movedLocations)))
                """
            ).map { [try $0.decode(0, as: UUID.self).uuidString, "\(try $0.decode(1, as: Bool.self))", "\(try $0.decode(2, as: Bool.self))"] }
        }
        #expect(rows == [[moved.uuidString, "true", "true"]], "hidden under their own category, at the cascade's stamp")
    }

    @Test("a write to a pending cascade's category that does not bring it back settles nothing, even one that keeps fields under the tombstone")
    func refusedWriteSettlesNothing() throws {
        let fixture = try Fixture()
        defer { fixture.db.drop() }
        Thread.sleep(forTimeInterval: 0.01)
        let tombstone = try fixture.db.services.categories.delete(fixture.caller, id: fixture.doomed, updatedAt: nil, reassignTo: nil)
        let listings = try fixture.listings()
        // Newer than its name, older than its delete: the name is kept under the tombstone (409).
        #expect(throws: LocifyError.self) {
            try fixture.db.services.categories.patch(
                fixture.caller, CategoryPatch(id: fixture.doomed, name: "Renamed", updatedAt: tombstone.updatedAt.adding(milliseconds: -1)))
        }
        #expect(throws: LocifyError.self) {
            try fixture.db.services.categories.replace(
                fixture.caller, CategoryDraft(id: fixture.doomed, name: "Older", updatedAt: Timestamp(milliseconds: 1_767_225_600_000)))
        }
        #expect(try fixture.liveRowsInDoomed() == 30, "before: the first write hid all 30")
        #expect(try fixture.pending() == [fixture.doomed.uuidString.lowercased()])
        #expect(try fixture.listings() == listings)
    }

    @Test("a category brought back while its cascade is pending brings its locations back")
    func comeBackWhilePending() throws {
        let fixture = try Fixture()
        defer { fixture.db.drop() }
        try fixture.cascade()
        _ = try fixture.db.services.categories.replace(fixture.caller, CategoryDraft(id: fixture.doomed, name: "Back"))
        #expect(try fixture.pending().isEmpty)
        #expect(try fixture.liveRowsInDoomed() == 30)
        #expect(try fixture.listings()[4].first == "total 30")
    }

    @Test("the cascade worker settles a pending cascade once woken")
    func workerSettles() async throws {
        let fixture = try Fixture()
        defer { fixture.db.drop() }
        let worker = CascadeWorker(pool: fixture.db.pool, cascades: fixture.db.services.cascades, interval: .seconds(3600), logger: TestDatabase.logger)
        worker.start()
        defer { worker.stop() }
        try fixture.cascade()
        worker.wake()
        var waited = 0
        while try !fixture.pending().isEmpty && waited < 600 {
            try await Task.sleep(for: .milliseconds(50))
            waited += 1
        }
        #expect(try fixture.pending().isEmpty)
        #expect(try fixture.liveRowsInDoomed() == 0)
    }

    @Test("an account deleted with a cascade pending goes whole; the purge keeps a pending cascade's category")
    func accountDeletionAndPurge() throws {
        let fixture = try Fixture()
        defer { fixture.db.drop() }
        try fixture.cascade()
        let purger = TombstonePurger(pool: fixture.db.pool, retentionSeconds: 0, interval: .seconds(3600), logger: TestDatabase.logger)
        purger.purgeNow()
        let doomedRows = {
            try fixture.db.pool.withConnection { connection in
                try connection.query(
                    """
                    SELECT (SELECT count(*) FROM categories WHERE user_id = \(fixture.caller.userID) AND id = \(fixture.doomed))
                         + (SELECT count(*) FROM locations WHERE user_id = \(fixture.caller.userID) AND category_id = \(fixture.doomed))
                    """
                ).first?.decode(0, as: Int64.self)
            }
        }
        #expect(try doomedRows() == 31, "the category's tombstone stays while its locations wait to be hidden")
        try fixture.db.services.users.delete(fixture.caller)
        #expect(try doomedRows() == 0)
        let left = try fixture.db.pool.withConnection { connection in
            try connection.query("SELECT count(*) FROM users WHERE id = \(fixture.caller.userID)").first?.decode(0, as: Int64.self)
        }
        #expect(left == 0)
    }
}

extension UUID {
    /// PostgreSQL's uuid order (bytewise), the feed's order within a stamp.
    func precedesBytewise(_ other: UUID) -> Bool {
        withUnsafeBytes(of: uuid) { a in withUnsafeBytes(of: other.uuid) { b in a.lexicographicallyPrecedes(b) } }
    }
}
