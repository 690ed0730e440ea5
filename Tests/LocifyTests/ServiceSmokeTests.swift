import Foundation
import Locify
import LocifyJobs
import LocifyRules
import Postgres
import Primitives
import Testing
import TestSupport
import TestSupportDatabase

@Suite("Domain services against PostgreSQL")
struct ServiceSmokeTests {
    @Test("a new user is provisioned with the four default categories at the epoch")
    func provisioning() throws {
        let db = try LocifyTestDatabase.create()
        defer { db.drop() }
        let caller = TestConstants.newCaller(email: "a@example.com", name: "Ann")
        let page = try db.services.categories.list(caller, PageRequest())
        #expect(page.totalCount == 4)
        #expect(page.records.map(\.name) == ["Cafe", "Favorites", "Restaurant", "Tourist Attraction"])
        #expect(page.records.allSatisfy { $0.isDefault && $0.createdAt == .epoch && $0.updatedAt == .epoch && $0.version == 1 })
        let profile = try db.services.users.profile(caller)
        #expect(profile.email == "a@example.com" && profile.name == "Ann")
    }

    @Test("create, list with counts, conflict, replay, delete with cascade")
    func lifecycle() throws {
        let db = try LocifyTestDatabase.create()
        defer { db.drop() }
        let caller = TestConstants.newCaller()
        let categoryID = UUID()
        let created = try db.services.categories.create(caller, CategoryDraft(id: categoryID, name: "Food"))
        guard case .created(let category) = created else {
            Issue.record("expected created, got \(created)")
            return
        }
        #expect(category.version == 1 && category.locationCount == 0)
        let t1 = Timestamp(rfc3339: "2025-01-01T10:00:00Z")
        let locationID = UUID()
        let imageURL = "https://firebasestorage.googleapis.com/v0/b/test-bucket/o/locations%2F\(caller.userID)%2Fx%2Fa.jpg?alt=media"
        func makeDraft(name: String, updatedAt: Timestamp?) throws -> LocationDraft {
            try LocationDraft(
                id: locationID, categoryID: categoryID, name: name, latitude: 1, longitude: 2, isFavorite: true,
                imageURLs: [imageURL], updatedAt: updatedAt)
        }
        var draft = try makeDraft(name: "Place", updatedAt: t1)
        guard case .created = try db.services.locations.create(caller, draft) else {
            Issue.record("expected created")
            return
        }
        guard case .unchanged(let replayed) = try db.services.locations.create(caller, draft) else {
            Issue.record("expected replay")
            return
        }
        #expect(replayed.version == 1)
        draft = try makeDraft(name: "Other", updatedAt: t1)
        #expect(throws: LocifyError.self) { try db.services.locations.create(caller, draft) }
        draft = try makeDraft(name: "Other", updatedAt: Timestamp(rfc3339: "2025-01-02T10:00:00Z"))
        guard case .updated(let updated) = try db.services.locations.replace(caller, draft) else {
            Issue.record("expected update")
            return
        }
        #expect(updated.version == 2 && updated.name == "Other")

        var list = try db.services.locations.list(caller, LocationQuery())
        #expect(list.totalCount == 1 && list.records.map(\.id) == [locationID])
        list = try db.services.locations.list(caller, LocationQuery(categoryID: categoryID, isFavorite: true))
        #expect(list.totalCount == 1)
        list = try db.services.locations.list(caller, LocationQuery(isFavorite: false))
        #expect(list.totalCount == 0 && list.records.isEmpty)
        list = try db.services.locations.list(caller, LocationQuery(search: "OTH"))
        #expect(list.totalCount == 1)
        #expect(try db.services.categories.get(caller, id: categoryID).locationCount == 1)

        let tombstone = try db.services.categories.delete(caller, id: categoryID, updatedAt: nil, reassignTo: nil)
        #expect(tombstone.deletedAt != nil && tombstone.version == 2)
        #expect(try db.services.locations.list(caller, LocationQuery()).totalCount == 0)
        #expect(throws: LocifyError.notFound(.location)) { try db.services.locations.get(caller, id: locationID) }
        // The category's clean-up with its delete, its location's as the cascade settles.
        CascadeWorker(pool: db.pool, cascades: db.services.cascades, logger: TestDatabase.logger).settleNow()
        let jobs = try db.pool.withConnection { connection in
            try connection.query("SELECT kind, target FROM cleanup_jobs ORDER BY id").map { row in
                "\(try row.decode(0, as: String.self)) \(try row.decode(1, as: String.self))"
            }
        }
        #expect(
            jobs == [
                "storage_prefix categories/\(caller.userID)/\(categoryID.uuidString.lowercased())/",
                "storage_prefix categories/\(caller.userID)/\(categoryID.uuidString)/",
                "storage_prefix locations/\(caller.userID)/\(locationID.uuidString.lowercased())/",
                "storage_prefix locations/\(caller.userID)/\(locationID.uuidString)/",
                "storage_object locations/\(caller.userID)/x/a.jpg",
            ])
        let feed = try db.services.sync.pull(caller, since: nil, limit: 100)
        #expect(feed.changes.count == 4 && !feed.hasMore)
    }
}
