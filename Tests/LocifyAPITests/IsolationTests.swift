import Foundation
import JSON
import Testing
import TestSupport
import TestSupportServer

@Suite("Isolation over HTTP: ids are scoped per user (openapi.yaml)")
struct IsolationTests {
    /// The status and body of a response (the request id differs between any two responses).
    private func visible(_ response: TestResponse) -> String { "\(response.status) \(response.text)" }

    @Test("another user's record answers GET, PUT and DELETE exactly like an id that never existed", arguments: Resource.allCases)
    func foreignRecordLooksMissing(resource: Resource) throws {
        let owner = try ResourceFixture(resource)
        let id = newID()
        let stored = try owner.create(id, name: "Private", minute: 10)
        let intruder = try ResourceFixture(resource)
        let missing = newID()
        let pairs: [(String, (String) throws -> TestResponse)] = [
            ("GET", { try intruder.get(id: $0) }),
            ("PUT path", { try intruder.put(id: $0, intruder.body(id: nil, name: "Mine", updatedAt: clientTime(20))) }),
            ("PUT body", { try intruder.put(intruder.body(id: $0, name: "Mine", updatedAt: clientTime(20))) }),
            ("PUT older", { try intruder.put(intruder.body(id: $0, name: "Mine", updatedAt: clientTime(0))) }),
            ("DELETE", { try intruder.delete(id: $0) }),
            ("DELETE older", { try intruder.delete(id: $0, query: "?updated_at=\(clientTime(0))") }),
            ("DELETE newer", { try intruder.delete(id: $0, ["updated_at": .string(clientTime(30))]) }),
        ]
        for (name, send) in pairs {
            let foreign = try send(id)
            expectError(foreign, 404, "E007")
            #expect(visible(foreign) == visible(try send(missing)), "\(name) tells the ids apart")
        }
        expectRecord(try owner.get(id: id), 200, stored)
        #expect(try owner.storedVersion(id) == 1)
    }

    @Test("POST of another user's id creates the caller's own record (201), never an upsert or a conflict against theirs", arguments: Resource.allCases)
    func postOfForeignIDCreates(resource: Resource) throws {
        let owner = try ResourceFixture(resource)
        let id = newID()
        let stored = try owner.create(id, name: "Theirs", minute: 10)
        let other = try ResourceFixture(resource)
        // Older than the owner's record: still a plain create for this user.
        let created = try other.post(other.body(id: id.uppercased(), name: "Mine", updatedAt: clientTime(0)))
        expectRecord(created, 201, other.record(id: id, name: "Mine", createdAt: clientTime(0), updatedAt: clientTime(0)))
        // Same time as the owner's, different content: no conflict either.
        let third = try ResourceFixture(resource)
        expectRecord(
            try third.post(third.body(id: id, name: "Third", updatedAt: clientTime(10))), 201,
            third.record(id: id, name: "Third", createdAt: clientTime(10), updatedAt: clientTime(10)))
        expectRecord(try owner.get(id: id), 200, stored)
        expectRecord(try other.get(id: id), 200, created.object)
    }

    @Test("another user's tombstone is invisible: DELETE is E007 (not an idempotent 204) and POST creates (not 409)", arguments: Resource.allCases)
    func foreignTombstoneInvisible(resource: Resource) throws {
        let owner = try ResourceFixture(resource)
        let id = newID()
        try owner.create(id, minute: 0)
        expectNoContent(try owner.delete(id: id, query: "?updated_at=\(clientTime(50))"))
        let other = try ResourceFixture(resource)
        expectError(try other.delete(id: id), 404, "E007")
        expectError(try other.put(other.body(id: id, updatedAt: clientTime(60))), 404, "E007")
        expectRecord(try other.post(other.body(id: id, updatedAt: clientTime(1))), 201, other.record(id: id, createdAt: clientTime(1), updatedAt: clientTime(1)))
        expectConflict(try owner.post(owner.body(id: id, updatedAt: clientTime(2))), data: tombstoneJSON(id: id, deletedAt: clientTime(50)))
    }

    @Test("two users hold the same category and location ids independently: writes, deletes and cascades of one never touch the other")
    func sameIDsIndependent() throws {
        let alice = try APIUser.fresh()
        let bob = try APIUser.fresh()
        let category = newID()
        let spare = newID()
        let place = newID()
        for user in [alice, bob] {
            try user.createCategory(category, name: "Shared id", updatedAtMinute: 0)
            try user.createCategory(spare, name: "Spare", updatedAtMinute: 0)
            try user.createLocation(place, in: category, name: "Place of \(user.uid)", ["updated_at": .string(clientTime(0)), "is_favorite": true])
        }
        let bobsCategory = try bob.get("/v1/categories/\(category)").object
        let bobsPlace = try bob.get("/v1/locations/\(place)").object
        #expect(bobsPlace["name"]?.stringValue == "Place of \(bob.uid)" && bobsPlace["user_id"]?.stringValue == bob.uid)

        // Alice edits, moves, deletes and cascades; Bob's copies stay exactly as they were.
        #expect(try alice.put("/v1/locations/\(place)", locationBody(id: nil, categoryID: spare, ["updated_at": .string(clientTime(1))])).status == 200)
        #expect(try alice.put("/v1/categories", categoryBody(id: category, name: "Renamed", ["updated_at": .string(clientTime(1))])).status == 200)
        expectRecord(try bob.get("/v1/categories/\(category)"), 200, bobsCategory)
        expectRecord(try bob.get("/v1/locations/\(place)"), 200, bobsPlace)
        expectNoContent(try alice.delete("/v1/categories/\(spare)"))
        expectError(try alice.get("/v1/locations/\(place)"), 404, "E007")
        expectRecord(try bob.get("/v1/locations/\(place)"), 200, bobsPlace)
        expectNoContent(try alice.delete("/v1/categories/\(category)?reassign_category_id=\(defaultCategories[0].id)"))
        expectRecord(try bob.get("/v1/locations/\(place)"), 200, bobsPlace)
        #expect(try bob.get("/v1/categories/\(category)").object["location_count"] == 1)
        #expect(try bob.get("/v1/locations?is_favorite=true").meta["total_count"] == 1)
        #expect(try bob.get("/v1/categories").meta["total_count"] == 6)
        #expect(try alice.get("/v1/categories").meta["total_count"] == 4)
        #expect(try alice.get("/v1/locations").meta["total_count"] == 0)

        // And the other way round: Bob's delete leaves Alice's revived copy alone.
        let revived = try alice.post("/v1/locations", locationBody(id: place, categoryID: defaultCategories[1].id, name: "Back"))
        #expect(revived.status == 200)
        expectNoContent(try bob.delete("/v1/locations/\(place)"))
        expectRecord(try alice.get("/v1/locations/\(place)"), 200, revived.object)
    }

    @Test("listings, filters and references never reach another user's records")
    func listingsAndReferences() throws {
        let alice = try APIUser.fresh()
        let bob = try APIUser.fresh()
        let alicesCategory = newID()
        try alice.createCategory(alicesCategory, name: "Alice only")
        try alice.createLocation(in: alicesCategory, name: "Secret", ["address": "Alice Street", "is_favorite": true])
        expectPage(try bob.get("/v1/locations"), ids: [], total: 0, pages: 0, page: 1, size: 20)
        expectPage(try bob.get("/v1/locations?q=secret"), ids: [], total: 0, pages: 0, page: 1, size: 20)
        expectPage(try bob.get("/v1/locations?is_favorite=true"), ids: [], total: 0, pages: 0, page: 1, size: 20)
        expectPage(try bob.get("/v1/locations?category_id=\(alicesCategory)"), ids: [], total: 0, pages: 0, page: 1, size: 20)
        let bobsCategories = try bob.get("/v1/categories")
        #expect(bobsCategories.meta["total_count"] == 4 && !ids(bobsCategories).contains(alicesCategory))
        expectError(try bob.post("/v1/locations", locationBody(id: newID(), categoryID: alicesCategory)), 404, "E007")
        expectError(try bob.delete("/v1/categories/\(defaultCategories[0].id)", ["reassign_category_id": .string(alicesCategory)]), 404, "E007")
        expectError(try bob.post("/v1/categories", categoryBody(id: newID(), ["user_id": .string(alice.uid)])), 403, "E006", field: "user_id")
        #expect(try alice.get("/v1/categories/\(alicesCategory)").object["location_count"] == 1)
    }
}
