import Foundation
import Locify
import LocifyJobs
import Testing
import TestSupport
import TestSupportDatabase

@Suite("Purged tombstones: a cursor behind one gets E009 whatever the clocks say")
struct SyncPurgedStampTests {
    @Test("a recent cursor that has not seen a delete is refused once that tombstone is purged; a caught-up one is not")
    func purgedStampExpiresCursor() throws {
        let db = try LocifyTestDatabase.create()
        defer { db.drop() }
        let caller = TestConstants.newCaller()
        let category = UUID()
        let location = UUID()
        _ = try db.services.categories.create(caller, CategoryDraft(id: category, name: "Parks"))
        _ = try db.services.locations.create(
            caller, LocationDraft(id: location, categoryID: category, name: "Park", latitude: 1, longitude: 2))
        let before = try db.services.sync.pull(caller, since: nil, limit: 100)
        #expect(!before.hasMore)
        _ = try db.services.locations.delete(caller, id: location, updatedAt: nil)
        let caughtUp = try db.services.sync.pull(caller, since: before.cursor, limit: 100)
        #expect(caughtUp.changes.map(\.id) == [location] && !caughtUp.hasMore)

        // Retention 0: every tombstone is past the horizon. The service keeps its 30 days, so
        // only the purged stamp can expire the cursors below.
        let purger = TombstonePurger(pool: db.pool, retentionSeconds: 0, interval: .seconds(3600), logger: TestDatabase.logger)
        Thread.sleep(forTimeInterval: 0.01)
        #expect(purger.purgeNow() == 1)

        #expect(throws: LocifyError.cursorExpired) { try db.services.sync.pull(caller, since: before.cursor, limit: 100) }
        let after = try db.services.sync.pull(caller, since: caughtUp.cursor, limit: 100)
        #expect(after.changes.isEmpty && !after.hasMore)
    }
}
