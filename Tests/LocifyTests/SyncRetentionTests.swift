import Foundation
import LocifyRules
import Postgres
import Primitives
import Testing
import TestSupport
import TestSupportDatabase

@testable import Locify
@testable import LocifyJobs

/// Tombstone retention (openapi.yaml): cursors age on the server's clock, the purge
/// removes only tombstones past the horizon, and a client that could miss a purged delete is
/// sent back to a full resync (E009).
@Suite("Sync retention: cursor age, tombstone purge")
struct SyncRetentionTests {
    /// A database whose tombstones are past the retention after a second.
    private static func shortRetentionDatabase() throws -> LocifyTestDatabase {
        var settings = LocifySettings(storageBucket: TestConstants.bucket)
        settings.tombstoneRetentionSeconds = 1
        return try LocifyTestDatabase.create(settings: settings)
    }

    private func issuedAt(_ page: FeedPage, _ caller: Caller) throws -> Timestamp {
        page.cursor.issuedAt
    }

    @Test("a caught-up cursor is as fresh as its pull; one in the middle of a backlog keeps the time the backlog began")
    func cursorAge() throws {
        let db = try LocifyTestDatabase.create()
        defer { db.drop() }
        let caller = TestConstants.newCaller()
        let sync = db.services.sync
        let first = try sync.pull(caller, since: nil, limit: 2)
        #expect(first.hasMore)
        let began = try issuedAt(first, caller)
        Thread.sleep(forTimeInterval: 0.01)
        let second = try sync.pull(caller, since: first.cursor, limit: 1)
        let secondIssuedAt = try issuedAt(second, caller)
        #expect(second.hasMore && secondIssuedAt == began)
        Thread.sleep(forTimeInterval: 0.01)
        let last = try sync.pull(caller, since: second.cursor, limit: 10)
        let lastIssuedAt = try issuedAt(last, caller)
        #expect(!last.hasMore && lastIssuedAt > began)
        let cursor = last.cursor
        #expect(cursor.phase == .delta && cursor.rank == 2)
    }

    @Test("the purge removes only tombstones past the horizon; live records and counts stay; the older cursor gets E009")
    func purge() throws {
        let db = try Self.shortRetentionDatabase()
        defer { db.drop() }
        let caller = TestConstants.newCaller()
        let other = TestConstants.newCaller()
        let services = db.services
        let (kept, gone) = (UUID(), UUID())
        let places = (0..<3).map { _ in UUID() }
        for owner in [caller, other] {
            _ = try services.categories.create(owner, CategoryDraft(id: kept, name: "Kept"))
            _ = try services.categories.create(owner, CategoryDraft(id: gone, name: "Gone"))
            for (index, id) in places.enumerated() {
                _ = try services.locations.create(
                    owner, LocationDraft(id: id, categoryID: index == 2 ? gone : kept, name: "P\(index)", latitude: 0, longitude: 0))
            }
        }
        let before = try services.sync.pull(caller, since: nil, limit: 100)
        _ = try services.locations.delete(caller, id: places[0], updatedAt: nil)
        _ = try services.categories.delete(caller, id: gone, updatedAt: nil, reassignTo: nil)  // cascades places[2]
        CascadeWorker(pool: db.pool, cascades: db.services.cascades, logger: TestDatabase.logger).settleNow()  // which tombstones it (PendingCascades)

        let tombstones = { (owner: Caller) throws -> Int64 in
            try db.pool.withConnection { connection in
                try connection.query(
                    """
                    SELECT (SELECT count(*) FROM categories WHERE user_id = \(owner.userID) AND deleted_at IS NOT NULL)
                         + (SELECT count(*) FROM locations WHERE user_id = \(owner.userID) AND deleted_at IS NOT NULL)
                    """
                ).first?.decode(0, as: Int64.self) ?? -1
            }
        }
        let patient = TombstonePurger(pool: db.pool, retentionSeconds: 3600, interval: .seconds(3600), logger: TestDatabase.logger)
        #expect(patient.purgeNow() == 0)
        #expect(try tombstones(caller) == 3)

        Thread.sleep(forTimeInterval: 1.2)
        let purger = TombstonePurger(pool: db.pool, retentionSeconds: 1, interval: .seconds(3600), logger: TestDatabase.logger)
        #expect(purger.purgeNow() == 3)
        #expect(try tombstones(caller) == 0)
        let live = try services.locations.list(caller, LocationQuery())
        #expect(live.totalCount == 1 && live.records.map(\.id) == [places[1]])
        #expect(try services.categories.get(caller, id: kept).locationCount == 1)
        #expect(try services.categories.list(caller, PageRequest()).totalCount == 5)
        // The other user's records are all live and untouched.
        #expect(try services.locations.list(other, LocationQuery()).totalCount == 3)

        #expect(throws: LocifyError.cursorExpired) { try services.sync.pull(caller, since: before.cursor, limit: 100) }
        let snapshot = try services.sync.pull(caller, since: nil, limit: 100)
        #expect(Set(snapshot.changes.map(\.id)) == Set(DefaultCategories.all.map(\.id) + [kept, places[1]]))
    }

    @Test("a category tombstone stays while a location is shown in its reassign target or a deleted category reassigns to it")
    func purgeKeepsFollowedCategories() throws {
        let db = try Self.shortRetentionDatabase()
        defer { db.drop() }
        let caller = TestConstants.newCaller()
        let services = db.services
        let (source, middle, target, moved) = (UUID(), UUID(), UUID(), UUID())
        for (id, name) in [(source, "Source"), (middle, "Middle"), (target, "Target")] {
            _ = try services.categories.create(caller, CategoryDraft(id: id, name: name))
        }
        _ = try services.locations.create(caller, LocationDraft(id: moved, categoryID: source, name: "Moved", latitude: 0, longitude: 0))
        // source -> middle -> target: the location is shown in target, following both tombstones.
        _ = try services.categories.delete(caller, id: middle, updatedAt: nil, reassignTo: target)
        _ = try services.categories.delete(caller, id: source, updatedAt: nil, reassignTo: middle)
        #expect(try services.locations.get(caller, id: moved).categoryID == target)

        Thread.sleep(forTimeInterval: 1.2)
        let purger = TombstonePurger(pool: db.pool, retentionSeconds: 1, interval: .seconds(3600), logger: TestDatabase.logger)
        #expect(purger.purgeNow() == 0)
        // Written into target itself, the location follows neither tombstone any more: source goes,
        // then middle, which source no longer reassigns to.
        _ = try services.locations.replace(caller, LocationDraft(id: moved, categoryID: target, name: "Moved", latitude: 0, longitude: 0))
        #expect(purger.purgeNow() == 1)
        #expect(purger.purgeNow() == 1)
        #expect(try services.locations.get(caller, id: moved).categoryID == target)
        #expect(try services.categories.get(caller, id: target).locationCount == 1)
    }
}
