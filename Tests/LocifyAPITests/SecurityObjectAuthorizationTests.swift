import Foundation
import JSON
import Testing
import TestSupport

/// OWASP API1 (broken object-level authorization): every endpoint that names a record, given
/// another user's id, behaves as if the id did not exist, and the owner's records never change.
/// `IsolationTests` covers the single-record endpoints in depth; this suite adds the sync
/// endpoints (push items and pull cursors) and references between records.
@Suite("Security: object-level authorization (OWASP API1)")
struct SecurityObjectAuthorizationTests {
    /// A victim with a category holding one location, and the attacker's view of the server.
    struct Scene {
        let victim: APIUser
        let attacker: APIUser
        let category: String
        let location: String
        let otherCategory: String

        init() throws {
            victim = try APIUser.fresh()
            attacker = try APIUser.fresh()
            category = newID()
            otherCategory = newID()
            location = newID()
            try victim.createCategory(category, name: "Victim home", updatedAtMinute: 0)
            try victim.createCategory(otherCategory, name: "Victim other", updatedAtMinute: 0)
            try victim.createLocation(location, in: category, name: "Victim place", ["updated_at": .string(clientTime(0))])
        }

        /// The victim's records exactly as the victim reads them.
        func victimState() throws -> [String] {
            try [
                "/v1/categories/\(category)", "/v1/categories/\(otherCategory)", "/v1/locations/\(location)",
                "/v1/categories?size=100", "/v1/locations?size=100",
            ].map { try victim.get($0).text }
        }
    }

    private func push(_ user: APIUser, _ changes: [JSONValue]) throws -> [JSONObject] {
        let response = try user.post("/v1/sync/push", ["changes": .array(changes)])
        #expect(response.status == 200, "push: \(response.text)")
        return (response.object["results"]?.arrayValue ?? []).compactMap(\.objectValue)
    }

    private func change(_ type: String, _ action: String, _ data: JSONObject) -> JSONValue {
        ["type": .string(type), "action": .string(action), "data": .object(data)]
    }

    @Test("push items naming the victim's ids: updates and deletes fail E007, creates make the attacker's own records, the victim's are untouched")
    func pushWithForeignIDs() throws {
        let scene = try Scene()
        let before = try scene.victimState()
        let newer = JSONValue.string(clientTime(100))
        let results = try push(
            scene.attacker,
            [
                change("category", "update", ["id": .string(scene.category), "name": "Stolen", "updated_at": newer]),
                change("location", "update", [
                    "id": .string(scene.location), "category_id": .string(scene.category), "name": "Stolen",
                    "latitude": 1, "longitude": 1, "updated_at": newer,
                ]),
                change("location", "delete", ["id": .string(scene.location), "updated_at": newer]),
                change("category", "delete", ["id": .string(scene.otherCategory), "updated_at": newer]),
                change("category", "delete", [
                    "id": .string(defaultCategories[0].id), "reassign_category_id": .string(scene.category), "updated_at": newer,
                ]),
                change("location", "create", [
                    "id": .string(newID()), "category_id": .string(scene.category), "name": "Into victim's category",
                    "latitude": 1, "longitude": 1,
                ]),
            ])
        #expect(results.count == 6)
        for (index, result) in results.enumerated() {
            #expect(result["status"]?.stringValue == "error", "change \(index): \(result)")
            #expect(result["error"]?.objectValue?["code"]?.stringValue == "E007", "change \(index): \(result)")
            #expect(result["data"] == nil, "change \(index) leaks data: \(result)")
        }
        #expect(try scene.victimState() == before)

        // A create with the victim's id is the attacker's own, new record (ids are per user).
        let created = try push(
            scene.attacker,
            [change("category", "create", ["id": .string(scene.category), "name": "Same id, attacker's own", "updated_at": newer])])
        #expect(created.first?["status"]?.stringValue == "applied")
        #expect(created.first?["data"]?.objectValue?["user_id"]?.stringValue == scene.attacker.uid)
        #expect(created.first?["data"]?.objectValue?["location_count"] == 0, "the victim's locations are not counted")
        #expect(try scene.victimState() == before)
    }

    @Test("a pull cursor issued to the victim is refused for the attacker (E001) and reveals nothing")
    func foreignCursor() throws {
        let scene = try Scene()
        let snapshot = try scene.victim.get("/v1/sync/changes?limit=1")
        #expect(snapshot.status == 200)
        let snapshotCursor = try #require(snapshot.object["cursor"]?.stringValue)
        let delta = try scene.victim.get("/v1/sync/changes?limit=1000")
        let deltaCursor = try #require(delta.object["cursor"]?.stringValue)
        for cursor in [snapshotCursor, deltaCursor] {
            let response = try scene.attacker.get("/v1/sync/changes?since=\(queryEncoded(cursor))")
            expectError(response, 400, "E001", field: "since")
            #expect(!response.text.contains(scene.category) && !response.text.contains(scene.location))
            #expect(try scene.victim.get("/v1/sync/changes?since=\(queryEncoded(cursor))").status == 200)
        }
    }

    @Test("the attacker's feed never carries the victim's records, even when both use the same ids")
    func feedIsolation() throws {
        let scene = try Scene()
        try scene.attacker.createCategory(scene.category, name: "Attacker's copy", updatedAtMinute: 5)
        let feed = try scene.attacker.get("/v1/sync/changes?limit=1000")
        #expect(feed.status == 200)
        let changes = feed.object["changes"]?.arrayValue ?? []
        #expect(changes.count == 5, "four defaults and the attacker's own category: \(feed.text)")
        for change in changes {
            let data = change.objectValue?["data"]?.objectValue
            #expect(data?["user_id"]?.stringValue == scene.attacker.uid)
            #expect(data?["id"]?.stringValue != scene.location)
        }
        #expect(!feed.text.contains("Victim"))
    }

    @Test("references to the victim's records are refused: a location moved into their category, a reassign onto it, a category_id filter")
    func foreignReferences() throws {
        let scene = try Scene()
        let before = try scene.victimState()
        let home = newID()
        try scene.attacker.createCategory(home, name: "Attacker home")
        let place = newID()
        try scene.attacker.createLocation(place, in: home)
        expectError(
            try scene.attacker.put("/v1/locations/\(place)", locationBody(id: nil, categoryID: scene.category)), 404, "E007")
        expectError(
            try scene.attacker.delete("/v1/categories/\(home)?reassign_category_id=\(scene.otherCategory)"), 404, "E007")
        expectPage(
            try scene.attacker.get("/v1/locations?category_id=\(scene.category)"), ids: [], total: 0, pages: 0, page: 1,
            size: 20)
        #expect(try scene.attacker.get("/v1/locations/\(place)").object["category_id"]?.stringValue == home)
        #expect(try scene.victimState() == before)
    }

    @Test("a token for one user never reaches another's profile: /v1/users/me is always the caller, and deleting it erases only the caller")
    func profiles() throws {
        let scene = try Scene()
        let before = try scene.victimState()
        let me = try scene.attacker.get("/v1/users/me")
        #expect(me.object["id"]?.stringValue == scene.attacker.uid)
        let renamed = try scene.attacker.put("/v1/users/me", ["name": "Mallory", "id": .string(scene.victim.uid)])
        #expect(renamed.status == 200 && renamed.object["id"]?.stringValue == scene.attacker.uid)
        #expect(try scene.victim.get("/v1/users/me").object["name"]?.stringValue != "Mallory")
        expectNoContent(try scene.attacker.delete("/v1/users/me"))
        #expect(try scene.victimState() == before)
    }
}
