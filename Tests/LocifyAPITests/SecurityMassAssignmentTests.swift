import Foundation
import JSON
import Testing
import TestSupport
import TestSupportServer

/// OWASP API3 (broken object property-level authorization, "mass assignment"): the read-only
/// members `user_id`, `version`, `location_count`, `created_at` (on update), `is_default`,
/// `sync_status` and `deleted_at` are never taken from a request body (openapi.yaml), on every
/// write path: `POST` (create), `PUT /v1/<resource>` (id in the body) and `PUT /v1/<resource>/{id}`
/// (id in the path), `DELETE /v1/<resource>/{id}` with a body, push creates and updates, and
/// `PUT /v1/users/me`. The API has no `PATCH`.
@Suite("Security: mass assignment of read-only fields (OWASP API3)")
struct SecurityMassAssignmentTests {
    /// Every read-only member with a value an attacker would like stored.
    static let forged: JSONObject = [
        "version": 99, "location_count": 42, "is_default": true, "sync_status": "pendingDelete",
        "deleted_at": "2020-01-01T00:00:00.000Z", "deleted": true,
    ]

    /// How a record is created and then replaced: over REST (`POST`, then `PUT` with the id in the
    /// body or in the path) or as one-change push batches (`create`, then `update`).
    enum WritePath: String, CaseIterable, Sendable {
        case restIDInBody
        case restIDInPath
        case push
    }

    private func merged(_ body: JSONValue, _ extra: JSONObject) -> JSONValue {
        guard case .object(var object) = body else { return body }
        for (key, value) in extra { object[key] = value }
        return .object(object)
    }

    @Test("a category create and a replace ignore version, location_count, is_default, sync_status, deleted_at and (on update) created_at", arguments: WritePath.allCases)
    func category(via path: WritePath) throws {
        let user = try APIUser.fresh()
        let id = newID()
        var body = merged(categoryBody(id: id, name: "Mine"), Self.forged)
        body = merged(body, ["user_id": .string(user.uid), "created_at": .string(clientTime(1)), "updated_at": .string(clientTime(2))])
        let created = try write(user, type: "category", action: "create", body, via: path)
        #expect(created == categoryJSON(id: id, user: user, name: "Mine", createdAt: clientTime(1), updatedAt: clientTime(2)))

        body = merged(body, ["name": "Renamed", "created_at": .string(clientTime(-500)), "updated_at": .string(clientTime(3)), "version": 1])
        let replaced = try write(user, type: "category", action: "update", body, via: path)
        #expect(
            replaced
                == categoryJSON(id: id, user: user, name: "Renamed", version: 2, createdAt: clientTime(1), updatedAt: clientTime(3)))
        #expect(try user.get("/v1/categories/\(id)").object == replaced)
    }

    @Test("a location create and a replace ignore the read-only members too", arguments: WritePath.allCases)
    func location(via path: WritePath) throws {
        let user = try APIUser.fresh()
        let home = newID()
        try user.createCategory(home, name: "Home", updatedAtMinute: 0)
        let id = newID()
        var body = merged(locationBody(id: id, categoryID: home), Self.forged)
        body = merged(body, ["user_id": .string(user.uid), "created_at": .string(clientTime(1)), "updated_at": .string(clientTime(2))])
        let created = try write(user, type: "location", action: "create", body, via: path)
        #expect(created == locationJSON(id: id, user: user, categoryID: home, createdAt: clientTime(1), updatedAt: clientTime(2)))

        body = merged(body, ["name": "Moved", "created_at": .string(clientTime(-500)), "updated_at": .string(clientTime(3))])
        let replaced = try write(user, type: "location", action: "update", body, via: path)
        #expect(
            replaced
                == locationJSON(
                    id: id, user: user, categoryID: home, name: "Moved", version: 2, createdAt: clientTime(1),
                    updatedAt: clientTime(3)))
        #expect(try user.get("/v1/categories/\(home)").object["location_count"] == 1)
    }

    @Test("another user's user_id is refused with E006 and nothing is stored, on every write path")
    func foreignUserID() throws {
        let user = try APIUser.fresh()
        let home = newID()
        try user.createCategory(home, name: "Home")
        let foreign: JSONObject = ["user_id": "someone-else"]
        let category = newID()
        let location = newID()
        expectError(try user.post("/v1/categories", merged(categoryBody(id: category), foreign)), 403, "E006", field: "user_id")
        expectError(
            try user.post("/v1/locations", merged(locationBody(id: location, categoryID: home), foreign)), 403, "E006",
            field: "user_id")
        expectError(try user.put("/v1/categories/\(home)", merged(categoryBody(id: nil), foreign)), 403, "E006", field: "user_id")
        expectError(try user.put("/v1/categories", merged(categoryBody(id: home), foreign)), 403, "E006", field: "user_id")
        let place = newID()
        try user.createLocation(place, in: home, name: "Place")
        expectError(
            try user.put("/v1/locations/\(place)", merged(locationBody(id: nil, categoryID: home, name: "Moved"), foreign)), 403,
            "E006", field: "user_id")
        expectError(
            try user.put("/v1/locations", merged(locationBody(id: place, categoryID: home, name: "Moved"), foreign)), 403, "E006",
            field: "user_id")
        let pushes: [(type: String, action: String, data: JSONValue)] = [
            ("category", "create", merged(categoryBody(id: category), foreign)),
            ("category", "update", merged(categoryBody(id: home, name: "Renamed"), foreign)),
            ("location", "create", merged(locationBody(id: location, categoryID: home), foreign)),
            ("location", "update", merged(locationBody(id: place, categoryID: home, name: "Moved"), foreign)),
        ]
        for change in pushes {
            let push = try user.post(
                "/v1/sync/push",
                ["changes": [["type": .string(change.type), "action": .string(change.action), "data": change.data]]])
            #expect(
                push.object["results"]?.arrayValue?.first?.objectValue?["error"]?.objectValue?["code"]?.stringValue == "E006",
                "push \(change.type) \(change.action): \(push.text)")
        }
        expectError(try user.get("/v1/categories/\(category)"), 404, "E007")
        expectError(try user.get("/v1/locations/\(location)"), 404, "E007")
        #expect(try user.get("/v1/categories/\(home)").object["name"]?.stringValue == "Home")
        #expect(try user.get("/v1/locations/\(place)").object["name"]?.stringValue == "Place")
    }

    @Test("a DELETE body's version and deleted_at are ignored: the tombstone is the stored version + 1, stamped by the server's rules", arguments: Resource.allCases)
    func deleteBody(resource: Resource) throws {
        let fixture = try ResourceFixture(resource)
        let id = newID()
        try fixture.create(id, minute: 1)
        let forgedDeletedAt = "2020-01-01T00:00:00.000Z"
        let body: JSONValue = ["updated_at": .string(clientTime(2)), "version": 99, "deleted_at": .string(forgedDeletedAt)]
        expectNoContent(try fixture.delete(id: id, body))
        #expect(try fixture.storedVersion(id) == 2)
        let deletedAt = try fixture.user.storedColumn(resource.table, id, "to_char(deleted_at, 'YYYY')")
        #expect(deletedAt != nil && deletedAt != "2020", "deleted_at \(deletedAt ?? "nil")")
    }

    @Test("a default category stays is_default true and an ordinary one stays false, whatever the body says")
    func isDefault() throws {
        let user = try APIUser.fresh()
        let cafe = defaultCategories[1].id
        let edited = try user.put("/v1/categories/\(cafe)", categoryBody(id: nil, name: "Coffee", ["is_default": false]))
        #expect(edited.status == 200 && edited.object["is_default"] == true)
        let ordinary = try user.post("/v1/categories", categoryBody(id: newID(), ["is_default": true]))
        #expect(ordinary.status == 201 && ordinary.object["is_default"] == false)
    }

    @Test("a sync_status outside the four client values is E001, not stored")
    func unknownSyncStatus() throws {
        let user = try APIUser.fresh()
        let id = newID()
        expectError(try user.post("/v1/categories", categoryBody(id: id, ["sync_status": "deleted"])), 400, "E001", field: "sync_status")
        expectError(try user.get("/v1/categories/\(id)"), 404, "E007")
    }

    @Test("PUT /v1/users/me ignores id, email and timestamps: only the name changes")
    func profile() throws {
        let user = try APIUser.fresh()
        let before = try user.get("/v1/users/me").object
        let response = try user.put(
            "/v1/users/me",
            ["name": "New name", "id": "someone-else", "email": "attacker@example.com", "created_at": "2000-01-01T00:00:00Z"])
        #expect(response.status == 200)
        #expect(response.object["id"]?.stringValue == user.uid)
        #expect(response.object["email"] == before["email"])
        #expect(response.object["created_at"] == before["created_at"])
        #expect(response.object["name"]?.stringValue == "New name")
    }

    /// Sends one write along `path` (`POST` or push `create` to create; `PUT` or push `update`
    /// to replace) and returns the stored record the answer carries.
    private func write(_ user: APIUser, type: String, action: String, _ body: JSONValue, via path: WritePath) throws -> JSONObject {
        let collection = type == "category" ? "/v1/categories" : "/v1/locations"
        let response: TestResponse
        switch path {
        case .push:
            let response = try user.post(
                "/v1/sync/push", ["changes": [["type": .string(type), "action": .string(action), "data": body]]])
            let result = response.object["results"]?.arrayValue?.first?.objectValue
            #expect(result?["status"]?.stringValue == "applied", "push: \(response.text)")
            return result?["data"]?.objectValue ?? [:]
        case _ where action == "create":
            response = try user.post(collection, body)
        case .restIDInBody:
            response = try user.put(collection, body)
        case .restIDInPath:
            let id = body.objectValue?["id"]?.stringValue ?? ""
            response = try user.put("\(collection)/\(id)", body)
        }
        #expect(response.status == (action == "create" ? 201 : 200), "\(action): \(response.text)")
        return response.object
    }
}
