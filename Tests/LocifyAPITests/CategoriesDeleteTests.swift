import Foundation
import JSON
import Locify
import LocifyRules
import Primitives
import Testing
import TestSupport
import TestSupportServer

/// A user with a category `source` holding locations stamped at different client minutes, a
/// second category `target`, and a location already in `target`.
struct CategoryDeleteFixture {
    let user: APIUser
    let source: String
    let target: String
    /// Live in `source`, last edited at minute 0 (before the delete at minute 10).
    let early: String
    /// Live in `source`, last edited at minute 20 (after the delete at minute 10).
    let late: String
    /// Deleted at minute 1, while in `source`.
    let deleted: String
    /// Live in `target`.
    let bystander: String

    init() throws {
        user = try APIUser.fresh()
        source = newID()
        target = newID()
        early = newID()
        late = newID()
        deleted = newID()
        bystander = newID()
        try user.createCategory(source, name: "Source", updatedAtMinute: 0)
        try user.createCategory(target, name: "Target", updatedAtMinute: 0)
        try user.createLocation(early, in: source, name: "Early", ["updated_at": .string(clientTime(0)), "is_favorite": true])
        try user.createLocation(late, in: source, name: "Late", ["updated_at": .string(clientTime(20))])
        try user.createLocation(deleted, in: source, name: "Deleted", ["updated_at": .string(clientTime(0))])
        expectNoContent(try user.delete("/v1/locations/\(deleted)?updated_at=\(clientTime(1))"))
        try user.createLocation(bystander, in: target, name: "Bystander", ["updated_at": .string(clientTime(0))])
    }

    func location(_ id: String) throws -> TestResponse { try user.get("/v1/locations/\(id)") }
    func category(_ id: String) throws -> TestResponse { try user.get("/v1/categories/\(id)") }

    /// Expects nothing changed: both categories live at version 1 with their locations in place.
    func expectUntouched(sourceLocation: SourceLocation = #_sourceLocation) throws {
        let sourceCategory = try category(source)
        #expect(sourceCategory.status == 200 && sourceCategory.object["version"] == 1, sourceLocation: sourceLocation)
        #expect(sourceCategory.object["location_count"] == 2, sourceLocation: sourceLocation)
        #expect(try category(target).object["location_count"] == 1, sourceLocation: sourceLocation)
        for id in [early, late] {
            let response = try location(id)
            #expect(response.status == 200, sourceLocation: sourceLocation)
            #expect(response.object["category_id"]?.stringValue == source, sourceLocation: sourceLocation)
            #expect(response.object["version"] == 1, sourceLocation: sourceLocation)
        }
    }

    /// Expects the reassign delete at minute 10 to have happened.
    func expectReassigned(sourceLocation: SourceLocation = #_sourceLocation) throws {
        expectError(try category(source), 404, "E007", sourceLocation: sourceLocation)
        expectConflict(
            try user.post("/v1/categories", categoryBody(id: source, name: "Source", ["updated_at": .string(clientTime(10))])),
            data: tombstoneJSON(id: source, deletedAt: clientTime(10)), sourceLocation: sourceLocation)
        // Each moved location: version + 1, its own clock kept (openapi.yaml, "Writes in any order").
        expectRecord(
            try location(early), 200,
            locationJSON(
                id: early, user: user, categoryID: target, name: "Early", isFavorite: true, version: 2, createdAt: clientTime(0),
                updatedAt: clientTime(0)), sourceLocation: sourceLocation)
        expectRecord(
            try location(late), 200,
            locationJSON(id: late, user: user, categoryID: target, name: "Late", version: 2, createdAt: clientTime(20), updatedAt: clientTime(20)),
            sourceLocation: sourceLocation)
        // The tombstone stays where it was, untouched.
        #expect(try user.storedVersion("locations", deleted) == 2, sourceLocation: sourceLocation)
        #expect(try user.storedColumn("locations", deleted, "category_id") == source, sourceLocation: sourceLocation)
        let targetCategory = try category(target)
        #expect(targetCategory.object["location_count"] == 3, sourceLocation: sourceLocation)
        #expect(targetCategory.object["version"] == 1, "the target category itself is not edited", sourceLocation: sourceLocation)
        let inTarget = try user.get("/v1/locations?category_id=\(target)")
        #expect(inTarget.meta["total_count"] == 3, sourceLocation: sourceLocation)
        #expect(
            Set(inTarget.data.compactMap { $0.objectValue?["id"]?.stringValue }) == [early, late, bystander],
            sourceLocation: sourceLocation)
        #expect(try user.get("/v1/locations?is_favorite=true").meta["total_count"] == 1, sourceLocation: sourceLocation)
    }
}

@Suite("Category delete over HTTP: reassign and cascade (openapi.yaml)")
struct CategoriesDeleteTests {
    @Test("reassign_category_id in the JSON body moves the live locations; each keeps its updated_at, version + 1")
    func reassignInBody() throws {
        let fixture = try CategoryDeleteFixture()
        expectNoContent(
            try fixture.user.delete(
                "/v1/categories/\(fixture.source)",
                ["reassign_category_id": .string(fixture.target.uppercased()), "updated_at": .string(clientTime(10))]))
        try fixture.expectReassigned()
    }

    @Test("reassign_category_id as a query parameter works the same")
    func reassignInQuery() throws {
        let fixture = try CategoryDeleteFixture()
        expectNoContent(
            try fixture.user.delete(
                "/v1/categories/\(fixture.source.uppercased())?reassign_category_id=\(fixture.target)&updated_at=\(clientTime(10))"))
        try fixture.expectReassigned()
    }

    @Test("reassign_category_id malformed is E002, a non-string E001, the deleted category itself E001; nothing changes")
    func reassignMalformedOrSelf() throws {
        let fixture = try CategoryDeleteFixture()
        let path = "/v1/categories/\(fixture.source)"
        expectError(try fixture.user.delete(path, ["reassign_category_id": "target"]), 400, "E002", field: "reassign_category_id")
        expectError(try fixture.user.delete(path + "?reassign_category_id=123"), 400, "E002", field: "reassign_category_id")
        expectError(try fixture.user.delete(path, ["reassign_category_id": 7]), 400, "E001", field: "reassign_category_id")
        expectError(try fixture.user.delete(path, ["reassign_category_id": .string(fixture.source)]), 400, "E001", field: "reassign_category_id")
        expectError(
            try fixture.user.delete(path + "?reassign_category_id=\(fixture.source.uppercased())"), 400, "E001",
            field: "reassign_category_id")
        try fixture.expectUntouched()
    }

    @Test("reassign_category_id naming an unknown or another user's category is E007; nothing changes")
    func reassignToMissingCategory() throws {
        let fixture = try CategoryDeleteFixture()
        let other = try APIUser.fresh()
        let othersCategory = newID()
        try other.createCategory(othersCategory)
        for missing in [newID(), othersCategory] {
            expectError(
                try fixture.user.delete("/v1/categories/\(fixture.source)", ["reassign_category_id": .string(missing)]), 404, "E007")
            expectError(try fixture.user.delete("/v1/categories/\(fixture.source)?reassign_category_id=\(missing)"), 404, "E007")
        }
        try fixture.expectUntouched()
        #expect(try other.get("/v1/categories/\(othersCategory)").object["location_count"] == 0)
        #expect(try other.get("/v1/locations").meta["total_count"] == 0)
    }

    @Test("reassign_category_id naming a deleted category: its locations follow that one (shown deleted), and come back with it")
    func reassignToDeletedCategory() throws {
        let fixture = try CategoryDeleteFixture()
        let user = fixture.user
        let gone = newID()
        try user.createCategory(gone, name: "Gone", updatedAtMinute: 0)
        expectNoContent(try user.delete("/v1/categories/\(gone)?updated_at=\(clientTime(5))"))
        expectNoContent(try user.delete("/v1/categories/\(fixture.source)?reassign_category_id=\(gone)&updated_at=\(clientTime(10))"))
        for id in [fixture.early, fixture.late] {
            expectError(try fixture.location(id), 404, "E007")
            #expect(try user.storedVersion("locations", id) == 2)
        }
        // The category they follow comes back with a newer write, and so do they, in it.
        #expect(try user.put("/v1/categories/\(gone)", categoryBody(id: gone, name: "Back", ["updated_at": .string(clientTime(30))])).status == 200)
        let inGone = try user.get("/v1/locations?category_id=\(gone)")
        #expect(Set(inGone.data.compactMap { $0.objectValue?["id"]?.stringValue }) == [fixture.early, fixture.late])
        #expect(try fixture.location(fixture.late).object["updated_at"]?.stringValue == clientTime(20))
        #expect(try fixture.category(gone).object["location_count"] == 2)
        expectError(try fixture.category(fixture.source), 404, "E007")
    }

    @Test("without reassign, the category's live locations are shown deleted (deleted_at = their own updated_at), version + 1")
    func cascade() throws {
        let fixture = try CategoryDeleteFixture()
        let user = fixture.user
        expectNoContent(try user.delete("/v1/categories/\(fixture.source)?updated_at=\(clientTime(10))"))
        expectError(try fixture.category(fixture.source), 404, "E007")
        for id in [fixture.early, fixture.late, fixture.deleted] { expectError(try fixture.location(id), 404, "E007") }
        // The server's cascade worker turns them into tombstones soon after (PendingCascades).
        try user.waitForSettledCascades()
        for id in [fixture.early, fixture.late, fixture.deleted] { #expect(try user.storedVersion("locations", id) == 2) }
        expectConflict(
            try user.post("/v1/locations", locationBody(id: fixture.early, categoryID: fixture.target, ["updated_at": .string(clientTime(0))])),
            data: tombstoneJSON(id: fixture.early, deletedAt: clientTime(0)))
        expectConflict(
            try user.post("/v1/locations", locationBody(id: fixture.late, categoryID: fixture.target, ["updated_at": .string(clientTime(19))])),
            data: tombstoneJSON(id: fixture.late, deletedAt: clientTime(20)))
        expectConflict(
            try user.put("/v1/locations", locationBody(id: fixture.deleted, categoryID: fixture.target, ["updated_at": .string(clientTime(1))])),
            data: tombstoneJSON(id: fixture.deleted, deletedAt: clientTime(1)))
        // The other category and its location are untouched.
        let target = try fixture.category(fixture.target)
        #expect(target.status == 200 && target.object["location_count"] == 1 && target.object["version"] == 1)
        let list = try user.get("/v1/locations")
        #expect(list.meta["total_count"] == 1 && list.data.first?.objectValue?["id"]?.stringValue == fixture.bystander)
        #expect(try user.get("/v1/locations?is_favorite=true").meta["total_count"] == 0)
        // A newer write into the deleted category is answered E007 and kept (still shown deleted,
        // at its time); a newer write into a live category brings the location back there.
        expectError(
            try user.post("/v1/locations", locationBody(id: fixture.late, categoryID: fixture.source, ["updated_at": .string(clientTime(30))])),
            404, "E007")
        expectConflict(
            try user.post("/v1/locations", locationBody(id: fixture.late, categoryID: fixture.target, ["updated_at": .string(clientTime(29))])),
            data: tombstoneJSON(id: fixture.late, deletedAt: clientTime(30)))
        let revived = try user.post(
            "/v1/locations", locationBody(id: fixture.late, categoryID: fixture.target, name: "Late", ["updated_at": .string(clientTime(31))]))
        expectRecord(
            revived, 200,
            locationJSON(
                id: fixture.late, user: user, categoryID: fixture.target, name: "Late", version: 4, createdAt: clientTime(20),
                updatedAt: clientTime(31)))
    }

    @Test("an unstamped category delete is stamped with the server clock; moved locations keep their own times")
    func unstampedDelete() throws {
        let fixture = try CategoryDeleteFixture()
        let before = WallClock.system.now()
        expectNoContent(try fixture.user.delete("/v1/categories/\(fixture.source)", ["reassign_category_id": .string(fixture.target)]))
        let after = WallClock.system.now()
        for (id, minute) in [(fixture.early, 0), (fixture.late, 20)] {
            let moved = try fixture.location(id)
            #expect(moved.object["updated_at"]?.stringValue == clientTime(minute) && moved.object["version"] == 2)
        }
        let conflict = try fixture.user.post(
            "/v1/categories", categoryBody(id: fixture.source, ["updated_at": .string(clientTime(0))]))
        let deletedAt = try #require(conflict.object["data"]?.objectValue.flatMap { timestamp($0, "deleted_at") })
        #expect(deletedAt >= before && deletedAt <= after)
    }

    @Test("a category delete older than the category is 409 E008 with the category; neither reassign nor cascade happens")
    func deleteConflict() throws {
        let fixture = try CategoryDeleteFixture()
        let source = try fixture.category(fixture.source).object
        let path = "/v1/categories/\(fixture.source)"
        expectConflict(
            try fixture.user.delete(path, ["updated_at": .string(clientTime(-1)), "reassign_category_id": .string(fixture.target)]),
            data: source)
        expectConflict(try fixture.user.delete(path + "?updated_at=\(clientTime(-1))"), data: source)
        try fixture.expectUntouched()
    }

    @Test("deleting an already deleted category is 204: an unstamped, older or same-time delete changes nothing; a newer one replaces it")
    func deleteAgain() throws {
        let fixture = try CategoryDeleteFixture()
        let path = "/v1/categories/\(fixture.source)"
        expectNoContent(try fixture.user.delete(path, ["reassign_category_id": .string(fixture.target), "updated_at": .string(clientTime(10))]))
        expectNoContent(try fixture.user.delete(path))
        expectNoContent(try fixture.user.delete(path, ["reassign_category_id": .string(fixture.target)]))
        expectNoContent(try fixture.user.delete(path + "?updated_at=\(clientTime(9))"))
        expectNoContent(try fixture.user.delete(path + "?updated_at=\(clientTime(10))"))
        try fixture.expectReassigned()
        #expect(try fixture.user.storedVersion("categories", fixture.source) == 2)
        // A newer delete, a cascade this time: the tombstone takes its time, and the locations
        // follow the cascade (shown deleted), each version + 1.
        expectNoContent(try fixture.user.delete(path + "?updated_at=\(clientTime(50))"))
        #expect(try fixture.user.storedVersion("categories", fixture.source) == 3)
        expectConflict(
            try fixture.user.post("/v1/categories", categoryBody(id: fixture.source, ["updated_at": .string(clientTime(49))])),
            data: tombstoneJSON(id: fixture.source, deletedAt: clientTime(50)))
        for id in [fixture.early, fixture.late] {
            expectError(try fixture.location(id), 404, "E007")
            #expect(try fixture.user.storedVersion("locations", id) == 3)
        }
        #expect(try fixture.category(fixture.target).object["location_count"] == 1)
    }

    @Test("default categories delete like any other: cascade, reassign into one, idempotent")
    func defaultCategoriesDelete() throws {
        let user = try APIUser.fresh()
        let restaurant = defaultCategories[0].id
        let cafe = defaultCategories[1].id
        let place = newID()
        try user.createLocation(place, in: restaurant, ["updated_at": .string(clientTime(0))])
        expectNoContent(try user.delete("/v1/categories/\(restaurant)?reassign_category_id=\(cafe.uppercased())&updated_at=\(clientTime(5))"))
        let moved = try user.get("/v1/locations/\(place)")
        #expect(moved.object["category_id"]?.stringValue == cafe && moved.object["updated_at"]?.stringValue == clientTime(0))
        expectNoContent(try user.delete("/v1/categories/\(cafe)"))
        expectError(try user.get("/v1/locations/\(place)"), 404, "E007")
        expectNoContent(try user.delete("/v1/categories/\(cafe)"))
        let categories = try user.get("/v1/categories")
        #expect(categories.meta["total_count"] == 2)
        #expect(categories.data.compactMap { $0.objectValue?["name"]?.stringValue } == ["Favorites", "Tourist Attraction"])
    }
}
