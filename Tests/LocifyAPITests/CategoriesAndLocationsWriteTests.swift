import Foundation
import JSON
import Testing
import TestSupport
import TestSupportServer

@Suite("Categories and locations over HTTP: every line of the write table (openapi.yaml)")
struct CategoriesAndLocationsWriteTests {
    // MARK: POST

    @Test("POST of a new id creates the record: 201, version 1", arguments: Resource.allCases)
    func postCreates(resource: Resource) throws {
        let fixture = try ResourceFixture(resource)
        let id = newID()
        let response = try fixture.post(fixture.body(id: id, updatedAt: clientTime(0)))
        expectRecord(response, 201, fixture.record(id: id, createdAt: clientTime(0), updatedAt: clientTime(0)))
        expectRecord(try fixture.get(id: id), 200, response.object)
    }

    @Test("POST of an existing id with a newer updated_at is an upsert that wins: 200, version + 1, created_at kept", arguments: Resource.allCases)
    func postUpsertWins(resource: Resource) throws {
        let fixture = try ResourceFixture(resource)
        let id = newID()
        try fixture.create(id, name: "First", minute: 0)
        let response = try fixture.post(fixture.body(id: id, name: "Second", updatedAt: clientTime(1), ["created_at": .string(clientTime(-9))]))
        let expected = fixture.record(id: id, name: "Second", version: 2, createdAt: clientTime(0), updatedAt: clientTime(1))
        expectRecord(response, 200, expected)
        expectRecord(try fixture.get(id: id), 200, expected)
    }

    @Test("POST replaying the same updated_at and the same content is idempotent: 200 with the stored record, version unchanged", arguments: Resource.allCases)
    func postReplay(resource: Resource) throws {
        let fixture = try ResourceFixture(resource)
        let id = newID()
        let created = try fixture.create(id, name: "Same", minute: 0)
        for _ in 0..<3 {
            expectRecord(try fixture.post(fixture.body(id: id, name: "Same", updatedAt: clientTime(0))), 200, created)
        }
        #expect(try fixture.storedVersion(id) == 1)
    }

    @Test("a replay compares normalised content: upper-case ids, untrimmed name, equivalent timestamp form", arguments: Resource.allCases)
    func postReplayNormalised(resource: Resource) throws {
        let fixture = try ResourceFixture(resource)
        let id = newID()
        let created = try fixture.create(id, name: "Same", minute: 0)
        var extra: JSONObject = ["user_id": .string(fixture.user.uid), "sync_status": "pendingCreate"]
        if resource == .locations {
            extra["category_id"] = .string(fixture.categoryID.uppercased())
            extra["address"] = "   "
            extra["description"] = ""
            extra["image_urls"] = []
            extra["is_favorite"] = false
        }
        // 12:00:00.000Z written as 13:00+01:00 with extra fraction digits.
        let sameInstant = "2025-03-01T13:00:00.000999+01:00"
        let replay = try fixture.post(fixture.body(id: id.uppercased(), name: "\u{A0} Same\n", updatedAt: sameInstant, extra))
        expectRecord(replay, 200, created)
        #expect(try fixture.storedVersion(id) == 1)
    }

    @Test("POST with an older updated_at loses: 409 E008 with the server's record in data beside error", arguments: Resource.allCases)
    func postOlderConflicts(resource: Resource) throws {
        let fixture = try ResourceFixture(resource)
        let id = newID()
        let stored = try fixture.create(id, name: "Newer", minute: 10)
        expectConflict(try fixture.post(fixture.body(id: id, name: "Older", updatedAt: clientTime(9))), data: stored)
        expectConflict(try fixture.post(fixture.body(id: id, name: "Newer", updatedAt: clientTime(10, milliseconds: -1))), data: stored)
        expectRecord(try fixture.get(id: id), 200, stored)
    }

    @Test("POST with the same updated_at but different content loses: 409 E008", arguments: Resource.allCases)
    func postSameTimeDifferentContent(resource: Resource) throws {
        let fixture = try ResourceFixture(resource)
        let id = newID()
        let stored = try fixture.create(id, name: "Mine", minute: 0)
        expectConflict(try fixture.post(fixture.body(id: id, name: "Theirs", updatedAt: clientTime(0))), data: stored)
        var different: JSONObject = [:]
        switch resource {
        case .categories: different["icon"] = "https://example.com/i.png"
        case .locations: different["is_favorite"] = true
        }
        expectConflict(try fixture.post(fixture.body(id: id, name: "Mine", updatedAt: clientTime(0), different)), data: stored)
        #expect(try fixture.storedVersion(id) == 1)
    }

    @Test("concurrent POSTs of one new id from several client threads, as a new user's first requests: exactly one 201, the identical others 200 at version 1", arguments: Resource.allCases)
    func concurrentCreatesOverHTTP(resource: Resource) throws {
        let server = try SharedServer.get()
        let user = try APIUser.fresh(on: server)
        let id = newID()
        let categoryID = defaultCategories[2].id
        let body: JSONValue =
            resource == .categories
            ? categoryBody(id: id, name: "Raced", ["updated_at": .string(clientTime(0))])
            : locationBody(id: id, categoryID: categoryID, name: "Raced", ["updated_at": .string(clientTime(0))])
        let responses = Locked<[TestResponse]>([])
        try runOnThreads(6) { _ in
            let response = try user.post(resource.path, body)
            responses.withLock { $0.append(response) }
        }
        let all = responses.value
        #expect(all.map(\.status).sorted() == [200, 200, 200, 200, 200, 201], "\(all.map(\.text))")
        #expect(all.allSatisfy { $0.object == all.first?.object }, "every answer carries the same record")
        #expect(all.first?.object["version"] == 1)
        #expect(try user.get("/v1/categories").meta["total_count"] == (resource == .categories ? 5 : 4))
    }

    // MARK: PUT

    @Test("PUT with the id in the body replaces the record: 200, version + 1", arguments: Resource.allCases)
    func putByBodyID(resource: Resource) throws {
        let fixture = try ResourceFixture(resource)
        let id = newID()
        try fixture.create(id, name: "Before", minute: 0)
        let expected = fixture.record(id: id, name: "After", version: 2, createdAt: clientTime(0), updatedAt: clientTime(1))
        expectRecord(try fixture.put(fixture.body(id: id.uppercased(), name: "After", updatedAt: clientTime(1))), 200, expected)
        expectRecord(try fixture.get(id: id), 200, expected)
    }

    @Test("PUT with the id in the path replaces the record; a body id equal to it in any letter case is fine", arguments: Resource.allCases)
    func putByPathID(resource: Resource) throws {
        let fixture = try ResourceFixture(resource)
        let id = newID()
        try fixture.create(id, name: "Before", minute: 0)
        expectRecord(
            try fixture.put(id: id.uppercased(), fixture.body(id: nil, name: "After", updatedAt: clientTime(1))), 200,
            fixture.record(id: id, name: "After", version: 2, createdAt: clientTime(0), updatedAt: clientTime(1)))
        expectRecord(
            try fixture.put(id: id, fixture.body(id: id.uppercased(), name: "Again", updatedAt: clientTime(2))), 200,
            fixture.record(id: id, name: "Again", version: 3, createdAt: clientTime(0), updatedAt: clientTime(2)))
    }

    @Test("PUT whose path id and body id differ is E001 on id; nothing changes", arguments: Resource.allCases)
    func putIDMismatch(resource: Resource) throws {
        let fixture = try ResourceFixture(resource)
        let id = newID()
        let other = newID()
        let stored = try fixture.create(id, minute: 0)
        try fixture.create(other, minute: 0)
        expectError(try fixture.put(id: id, fixture.body(id: other, name: "X", updatedAt: clientTime(1))), 400, "E001", field: "id")
        expectRecord(try fixture.get(id: id), 200, stored)
    }

    @Test("PUT of an id that never existed is E007 (id in body or path), and creates nothing", arguments: Resource.allCases)
    func putUnknownID(resource: Resource) throws {
        let fixture = try ResourceFixture(resource)
        let id = newID()
        expectError(try fixture.put(fixture.body(id: id, updatedAt: clientTime(0))), 404, "E007")
        expectError(try fixture.put(id: id, fixture.body(id: nil, updatedAt: clientTime(0))), 404, "E007")
        expectError(try fixture.put(id: id, fixture.body(id: nil, updatedAt: nil)), 404, "E007")
        expectError(try fixture.get(id: id), 404, "E007")
    }

    @Test("PUT replaying the stored write is idempotent (200, version unchanged); an older PUT is 409 E008 with the record", arguments: Resource.allCases)
    func putReplayAndConflict(resource: Resource) throws {
        let fixture = try ResourceFixture(resource)
        let id = newID()
        try fixture.create(id, name: "V1", minute: 0)
        let updated = try fixture.put(id: id, fixture.body(id: nil, name: "V2", updatedAt: clientTime(5)))
        #expect(updated.status == 200)
        expectRecord(try fixture.put(id: id, fixture.body(id: nil, name: "V2", updatedAt: clientTime(5))), 200, updated.object)
        expectConflict(try fixture.put(fixture.body(id: id, name: "V3", updatedAt: clientTime(5))), data: updated.object)
        expectConflict(try fixture.put(fixture.body(id: id, name: "V0", updatedAt: clientTime(4))), data: updated.object)
        #expect(try fixture.storedVersion(id) == 2)
    }

    // MARK: Tombstones

    @Test("POST and PUT on a tombstone newer than its deleted_at bring the record back: 200, version + 1", arguments: Resource.allCases)
    func tombstoneRevivedWhenNewer(resource: Resource) throws {
        let fixture = try ResourceFixture(resource)
        for (index, revive) in ["POST", "PUT body", "PUT path"].enumerated() {
            let id = newID()
            try fixture.create(id, minute: 0)
            expectNoContent(try fixture.delete(id: id, query: "?updated_at=\(clientTime(1))"))
            #expect(try fixture.storedVersion(id) == 2, "a delete increases the version")
            let body = fixture.body(id: revive == "PUT path" ? nil : id, name: "Back \(index)", updatedAt: clientTime(2))
            let response: TestResponse
            switch revive {
            case "POST": response = try fixture.post(body)
            case "PUT body": response = try fixture.put(body)
            default: response = try fixture.put(id: id, body)
            }
            let expected = fixture.record(id: id, name: "Back \(index)", version: 3, createdAt: clientTime(0), updatedAt: clientTime(2))
            expectRecord(response, 200, expected)
            expectRecord(try fixture.get(id: id), 200, expected)
        }
    }

    @Test("POST and PUT on a tombstone at or before its deleted_at are 409 E008 with the tombstone", arguments: Resource.allCases)
    func tombstoneWinsWhenOlder(resource: Resource) throws {
        let fixture = try ResourceFixture(resource)
        let id = newID()
        try fixture.create(id, minute: 0)
        expectNoContent(try fixture.delete(id: id, query: "?updated_at=\(clientTime(3))"))
        let tombstone = tombstoneJSON(id: id, deletedAt: clientTime(3))
        for minute in [3, 2, 0] {
            expectConflict(try fixture.post(fixture.body(id: id, updatedAt: clientTime(minute))), data: tombstone)
            expectConflict(try fixture.put(fixture.body(id: id, updatedAt: clientTime(minute))), data: tombstone)
            expectConflict(try fixture.put(id: id.uppercased(), fixture.body(id: nil, updatedAt: clientTime(minute))), data: tombstone)
        }
        expectError(try fixture.get(id: id), 404, "E007")
        #expect(try fixture.storedVersion(id) == 2)
    }

    // MARK: DELETE

    @Test("DELETE leaves a tombstone: 204; again 204 (idempotent); an id that never existed is E007; a malformed id E002", arguments: Resource.allCases)
    func deleteIdempotent(resource: Resource) throws {
        let fixture = try ResourceFixture(resource)
        let id = newID()
        try fixture.create(id, minute: 0)
        expectNoContent(try fixture.delete(id: id.uppercased()))
        expectError(try fixture.get(id: id), 404, "E007")
        #expect(try fixture.storedVersion(id) == 2)
        expectNoContent(try fixture.delete(id: id))
        expectNoContent(try fixture.delete(id: id, query: "?updated_at=\(clientTime(-100))"))
        #expect(try fixture.storedVersion(id) == 2, "a repeated delete changes nothing")
        expectError(try fixture.delete(id: newID()), 404, "E007")
        expectError(try fixture.delete(id: newID(), query: "?updated_at=\(clientTime(0))"), 404, "E007")
        expectError(try fixture.delete(id: "not-a-uuid"), 400, "E002", field: "id")
        let list = try fixture.user.get(resource.path)
        #expect(!list.data.contains { $0.objectValue?["id"]?.stringValue == id })
    }

    @Test("DELETE with an updated_at query parameter older than the live record is 409 E008 with the record; equal or newer deletes at that time", arguments: Resource.allCases)
    func deleteWithUpdatedAtQuery(resource: Resource) throws {
        let fixture = try ResourceFixture(resource)
        let id = newID()
        let stored = try fixture.create(id, minute: 10)
        expectConflict(try fixture.delete(id: id, query: "?updated_at=\(clientTime(9))"), data: stored)
        expectConflict(try fixture.delete(id: id, query: "?updated_at=\(queryEncoded("2025-03-01T12:09:59.999+00:00"))"), data: stored)
        expectRecord(try fixture.get(id: id), 200, stored)
        // 12:10:00Z written as 13:10:00+01:00 (the + percent-encoded, as in any query).
        expectNoContent(try fixture.delete(id: id, query: "?updated_at=\(queryEncoded("2025-03-01T13:10:00+01:00"))"))
        expectConflict(try fixture.post(fixture.body(id: id, updatedAt: clientTime(10))), data: tombstoneJSON(id: id, deletedAt: clientTime(10)))
        let other = newID()
        try fixture.create(other, minute: 0)
        expectNoContent(try fixture.delete(id: other, query: "?updated_at=\(clientTime(7, milliseconds: 250))"))
        expectConflict(
            try fixture.put(fixture.body(id: other, updatedAt: clientTime(7))), data: tombstoneJSON(id: other, deletedAt: clientTime(7, milliseconds: 250)))
    }

    @Test("DELETE with updated_at in a JSON body follows the same rule", arguments: Resource.allCases)
    func deleteWithUpdatedAtBody(resource: Resource) throws {
        let fixture = try ResourceFixture(resource)
        let id = newID()
        let stored = try fixture.create(id, minute: 10)
        expectConflict(try fixture.delete(id: id, ["updated_at": .string(clientTime(9))]), data: stored)
        expectNoContent(try fixture.delete(id: id, ["updated_at": .string(clientTime(11)), "unknown": true]))
        expectConflict(try fixture.post(fixture.body(id: id, updatedAt: clientTime(11))), data: tombstoneJSON(id: id, deletedAt: clientTime(11)))
        // Already deleted: 204 whatever the time; an older delete changes nothing, a newer one moves
        // the tombstone to its time (openapi.yaml, "Writes in any order").
        expectNoContent(try fixture.delete(id: id, ["updated_at": .string(clientTime(1))]))
        expectConflict(try fixture.post(fixture.body(id: id, updatedAt: clientTime(11))), data: tombstoneJSON(id: id, deletedAt: clientTime(11)))
        expectNoContent(try fixture.delete(id: id, ["updated_at": .string(clientTime(20))]))
        expectConflict(try fixture.post(fixture.body(id: id, updatedAt: clientTime(19))), data: tombstoneJSON(id: id, deletedAt: clientTime(20)))
    }

    @Test("DELETE options that are malformed are refused: bad updated_at E001, non-object or invalid JSON body E001, non-JSON body E012", arguments: Resource.allCases)
    func deleteMalformedOptions(resource: Resource) throws {
        let fixture = try ResourceFixture(resource)
        let id = newID()
        let stored = try fixture.create(id, minute: 0)
        expectError(try fixture.delete(id: id, query: "?updated_at=yesterday"), 400, "E001", field: "updated_at")
        expectError(try fixture.delete(id: id, ["updated_at": 5]), 400, "E001", field: "updated_at")
        expectError(try fixture.delete(id: id, ["updated_at": "soon"]), 400, "E001", field: "updated_at")
        for body: JSONValue in [[1], "x", 3, true] {
            expectError(try fixture.delete(id: id, body), 400, "E001", field: "body")
        }
        let user = fixture.user
        let path = "\(resource.path)/\(id)"
        expectError(try user.send("DELETE", path, body: Array("{".utf8), headers: [("Content-Type", "application/json")]), 400, "E001", field: "body")
        expectError(try user.send("DELETE", path, body: Array("updated_at=x".utf8), headers: [("Content-Type", "application/x-www-form-urlencoded")]), 415, "E012")
        expectError(try user.send("DELETE", path, body: Array("{}".utf8)), 415, "E012")
        expectRecord(try fixture.get(id: id), 200, stored)
        // An empty JSON object is no options at all.
        expectNoContent(try fixture.delete(id: id, [:]))
    }
}
