import Foundation
import JSON
import Locify
import LocifyAPI
import Testing
import TestSupport
import TestSupportServer

/// `POST /v1/sync/push` (openapi.yaml), end to end over HTTP.
@Suite("Sync push: batches applied change by change, in the contract's order, idempotent on replay")
struct SyncPushTests {
    typealias C = SyncChange

    @Test("a batch of 50 changes is applied with one result per change, in the order sent")
    func fiftyChanges() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let client = try SyncTestClient(server)
        let categoryIDs = (0..<10).map { _ in UUID() }
        var changes: [JSONValue] = categoryIDs.enumerated().map { index, id in
            C.change("category", "create", C.category(id, name: "Category \(index)", at: 1))
        }
        for index in 0..<40 {
            changes.append(C.change("location", "create", C.location(UUID(), category: categoryIDs[index % 10], name: "Place \(index)", at: 2)))
        }
        // Locations listed first: they still find the categories of the same batch.
        changes = Array(changes[10...]) + Array(changes[..<10])
        #expect(changes.count == 50)
        let results = try client.pushResults(changes)
        #expect(results.allSatisfy { $0.string("status") == "applied" && $0["error"] == nil })
        #expect(results.map(\.changeKey) == changes.map { change in
            let object = change.objectValue ?? JSONObject()
            return "\(object["type"]?.stringValue ?? ""):\(object["data"]?.objectValue?["id"]?.stringValue?.lowercased() ?? "")"
        })
        #expect(try client.listCategories().count == 14)
        #expect(try client.listLocations().count == 40)
    }

    @Test("51 changes are refused with 400 E001 and nothing is applied")
    func fiftyOneChanges() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let client = try SyncTestClient(server)
        let before = try client.drain(limit: 100).cursor
        let category = UUID()
        var changes = [C.change("category", "create", C.category(category, name: "Food", at: 1))]
        for index in 0..<50 {
            changes.append(C.change("location", "create", C.location(UUID(), category: category, name: "Place \(index)", at: 1)))
        }
        let response = try client.push(changes)
        #expect(response.status == 400 && response.errorCode == "E001" && response.errorField == "changes")
        #expect(response.object["results"] == nil)
        #expect(try client.listCategories().count == 4)
        #expect(try client.listLocations().isEmpty)
        #expect(try client.page(since: before).changes.isEmpty)
    }

    @Test("the push limit is configurable (LOCIFY_MAX_PUSH_CHANGES) and GET /v1/info reports it")
    func configurableLimit() throws {
        var environment = ["DATABASE_URL": "postgres://localhost/x", "FIREBASE_PROJECT_ID": "p"]
        #expect(try Configuration(environment: environment).maxPushChanges == 50)
        environment["LOCIFY_MAX_PUSH_CHANGES"] = "3"
        #expect(try Configuration(environment: environment).maxPushChanges == 3)
        for bad in ["0", "-1", "many"] {
            environment["LOCIFY_MAX_PUSH_CHANGES"] = bad
            #expect(throws: ConfigurationError.self) { try Configuration(environment: environment) }
        }

        let server = try TestServer.start(.inProcess) { configuration in
            configuration.maxPushChanges = 3
            configuration.tombstoneRetentionSeconds = 86_400
        }
        defer { server.stop() }
        let client = try SyncTestClient(server)
        let info = try server.request("GET", "/v1/info", token: client.token)
        #expect(info.status == 200)
        #expect(
            info.object
                == [
                    "max_push_changes": 3, "max_page_size": 100, "max_pull_limit": 1000, "max_body_bytes": 2_097_152,
                    "tombstone_retention_seconds": 86_400, "max_wait_seconds": 60,
                ])
        #expect(try server.request("GET", "/v1/info").errorCode == "E005")
        let three = (0..<3).map { C.change("category", "create", C.category(UUID(), name: "C\($0)", at: 1)) }
        #expect(try client.pushResults(three).allSatisfy { $0.string("status") == "applied" })
        let four = (0..<4).map { C.change("category", "create", C.category(UUID(), name: "D\($0)", at: 1)) }
        let refused = try client.push(four)
        #expect(refused.status == 400 && refused.errorCode == "E001")
        #expect(try client.listCategories().count == 7)
    }

    @Test("mixed results come back in the order sent, and a bad change stops none of the others")
    func mixedResults() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let client = try SyncTestClient(server)
        let home = UUID()
        let existing = UUID()
        _ = try client.pushResults([
            C.change("category", "create", C.category(home, name: "Home", at: 1)),
            C.change("location", "create", C.location(existing, category: home, name: "Existing", at: 1)),
            C.change("location", "update", C.location(existing, category: home, name: "Existing v2", at: 20)),
        ])
        let newCategory = UUID()
        let newLocation = UUID()
        var badLatitude = C.location(UUID(), category: home, name: "Too far north", at: 30)
        badLatitude["latitude"] = 91
        var noName = C.location(UUID(), category: home, name: "x", at: 30)
        noName["name"] = nil
        var foreign = C.category(UUID(), name: "Foreign", at: 30)
        foreign["user_id"] = "someone-else"
        var badID = C.location(UUID(), category: home, name: "Bad id", at: 30)
        badID["id"] = "not-a-uuid"
        let neverExisted = UUID()
        let changes: [JSONValue] = [
            C.change("category", "create", C.category(newCategory, name: "Fresh", at: 30)),
            C.change("location", "create", badLatitude),
            C.change("location", "update", C.location(existing, category: home, name: "Stale edit", at: 15)),
            C.change("location", "create", C.location(UUID(), category: UUID(), name: "Orphan", at: 30)),
            C.change("location", "create", noName),
            C.change("category", "create", foreign),
            C.change("location", "update", badID),
            C.change("category", "create", C.category(UUID(), name: String(repeating: "n", count: 256), at: 30)),
            C.change("location", "create", C.location(newLocation, category: newCategory, name: "In fresh", at: 30)),
            C.change("location", "delete", C.deletion(existing, at: 5)),
            C.change("category", "delete", C.deletion(neverExisted, at: 30)),
        ]
        let results = try client.pushResults(changes)
        guard results.count == changes.count else { return }
        let expected: [(String, String?)] = [
            ("applied", nil), ("error", "E003"), ("conflict", "E008"), ("error", "E007"), ("error", "E004"), ("error", "E006"),
            ("error", "E002"), ("error", "E001"), ("applied", nil), ("conflict", "E008"), ("error", "E007"),
        ]
        for (index, (status, code)) in expected.enumerated() {
            #expect(results[index].string("status") == status, "result \(index)")
            #expect(results[index].resultErrorCode == code, "result \(index)")
            #expect(results[index].string("type") == changes[index].objectValue?["type"]?.stringValue, "result \(index)")
            let isError = status == "error"
            #expect((results[index]["data"] == nil) == isError, "data for applied and conflict only (result \(index))")
            if let error = results[index]["error"]?.objectValue {
                #expect(error["message"]?.stringValue?.isEmpty == false)
            }
        }
        #expect(results[0].string("id") == newCategory.lowercasedString)
        #expect(results[0].dataObject.string("name") == "Fresh" && results[0].dataObject.int("version") == 1)
        #expect(results[6].string("id") == "not-a-uuid")
        #expect(results[8].dataObject.string("category_id") == newCategory.lowercasedString)
        // Both conflicts carry the server's current record: the edit at minute 20, version 2.
        for index in [2, 9] {
            #expect(results[index].string("id") == existing.lowercasedString)
            #expect(results[index].dataObject.string("name") == "Existing v2")
            #expect(results[index].dataObject.int("version") == 2)
            #expect(results[index].dataObject.string("updated_at") == C.time(20))
        }
        let locations = try client.listLocations()
        #expect(Set(locations.map { $0.string("id") }) == [existing.lowercasedString, newLocation.lowercasedString])
        #expect(try client.listCategories().count == 6)
    }

    @Test("a location and its new category apply in one batch, whichever is listed first", arguments: [true, false])
    func categoryAndLocationInOneBatch(locationFirst: Bool) throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let client = try SyncTestClient(server)
        let category = UUID()
        let location = UUID()
        var changes = [
            C.change("category", "create", C.category(category, name: "Brand new", at: 1)),
            C.change("location", "create", C.location(location, category: category, name: "Inside", at: 1)),
        ]
        if locationFirst { changes.reverse() }
        let results = try client.pushResults(changes)
        #expect(results.allSatisfy { $0.string("status") == "applied" })
        #expect(results.map { $0.string("type") } == (locationFirst ? ["location", "category"] : ["category", "location"]))
        let stored = try client.get("location", location)
        #expect(stored.status == 200 && stored.object.string("category_id") == category.lowercasedString)
        #expect(try client.get("category", category).object.int("location_count") == 1)
    }

    @Test("a category delete with reassign runs after the batch's location changes, then a replay changes nothing")
    func reassignAfterMoves() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let client = try SyncTestClient(server)
        let old = UUID()
        let target = UUID()
        let (moved, added, alreadyThere) = (UUID(), UUID(), UUID())
        _ = try client.pushResults([
            C.change("category", "create", C.category(old, name: "Old", at: 1)),
            C.change("location", "create", C.location(moved, category: old, name: "Moved", at: 1)),
        ])
        let before = try client.drain(limit: 100).cursor
        let batch: [JSONValue] = [
            C.change("category", "delete", C.deletion(old, at: 10, reassignTo: target)),
            C.change("location", "update", C.location(moved, category: old, name: "Moved and renamed", at: 5)),
            C.change("location", "create", C.location(added, category: old, name: "Added to old", at: 5)),
            C.change("category", "create", C.category(target, name: "Target", at: 2)),
            C.change("location", "create", C.location(alreadyThere, category: target, name: "Already there", at: 5)),
        ]
        let results = try client.pushResults(batch)
        #expect(results.map { $0.string("status") } == Array(repeating: "applied", count: 5))
        #expect(results[0].dataObject == ["id": .string(old.lowercasedString), "deleted": true, "deleted_at": .string(C.time(10))])
        // The location changes ran before the delete: they were applied in the old category.
        #expect(results[1].dataObject.string("category_id") == old.lowercasedString)
        #expect(results[2].dataObject.string("category_id") == old.lowercasedString)

        let locations = try client.listLocations()
        #expect(locations.count == 3)
        #expect(locations.allSatisfy { $0.string("category_id") == target.lowercasedString })
        let byID = Dictionary(uniqueKeysWithValues: locations.map { ($0.string("id"), $0) })
        // Moved by the reassign: version + 1, their own clocks kept (openapi.yaml, "Writes in any order").
        #expect(byID[moved.lowercasedString]?.int("version") == 3)
        #expect(byID[moved.lowercasedString]?.string("updated_at") == C.time(5))
        #expect(byID[moved.lowercasedString]?.string("name") == "Moved and renamed")
        #expect(byID[added.lowercasedString]?.int("version") == 2)
        #expect(byID[alreadyThere.lowercasedString]?.int("version") == 1)
        #expect(try client.get("category", target).object.int("location_count") == 3)
        #expect(try client.get("category", old).status == 404)

        let delta = try client.drain(since: before, limit: 100)
        let keys = delta.pages.flatMap(\.keys)
        #expect(
            Set(keys)
                == [
                    "category:\(old.lowercasedString)", "category:\(target.lowercasedString)",
                    "location:\(moved.lowercasedString)", "location:\(added.lowercasedString)",
                    "location:\(alreadyThere.lowercasedString)",
                ])
        #expect(keys.count == 5)

        // Replayed: every change replays (the location edits are still their own last writes; they
        // answer where the reassign shows them), and nothing changes.
        let replay = try client.pushResults(batch)
        #expect(replay.map { $0.string("status") } == Array(repeating: "applied", count: 5))
        #expect(replay[1].dataObject.string("category_id") == target.lowercasedString)
        #expect(replay[1].dataObject.int("version") == 3)
        #expect(try client.page(since: delta.cursor).changes.isEmpty)
    }

    @Test("replaying a whole batch is idempotent: every change applied, versions unchanged, nothing new in the feed")
    func fullReplay() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let client = try SyncTestClient(server)
        let cafe = DefaultCategories.all[1].id
        let (kept, cascaded, fresh) = (UUID(), UUID(), UUID())
        let (keptPlace, cafePlace, cascadedPlace, freshPlace) = (UUID(), UUID(), UUID(), UUID())
        _ = try client.pushResults([
            C.change("category", "create", C.category(kept, name: "Kept", at: 1)),
            C.change("category", "create", C.category(cascaded, name: "Cascaded", at: 1)),
            C.change("location", "create", C.location(keptPlace, category: kept, name: "Kept place", at: 1)),
            C.change("location", "create", C.location(cafePlace, category: cafe, name: "Cafe place", at: 1)),
            C.change("location", "create", C.location(cascadedPlace, category: cascaded, name: "Cascaded place", at: 1)),
        ])
        var iconed = C.category(fresh, name: "Fresh", at: 2)
        iconed["icon"] = "https://example.com/icon.png"
        var described = C.location(freshPlace, category: fresh, name: " Fresh place ", at: 2)
        described["description"] = "line one\nline two"
        described["image_urls"] = ["https://example.com/a.jpg", "https://example.com/b.jpg"]
        described["is_favorite"] = true
        described["sync_status"] = "pendingCreate"
        let batch: [JSONValue] = [
            C.change("category", "create", iconed),
            C.change("location", "create", described),
            C.change("location", "update", C.location(keptPlace, category: kept, name: "Kept place, renamed", at: 3)),
            C.change("location", "delete", C.deletion(cafePlace, at: 3)),
            C.change("category", "delete", C.deletion(cascaded, at: 3)),
            C.change("category", "update", C.category(kept, name: "Kept, renamed", at: 3)),
        ]
        let first = try client.pushResults(batch)
        #expect(first.allSatisfy { $0.string("status") == "applied" })
        let cursor = try client.drain(limit: 100).cursor
        let categoriesBefore = try client.listCategories()
        let locationsBefore = try client.listLocations()

        let replay = try client.pushResults(batch)
        #expect(replay.allSatisfy { $0.string("status") == "applied" && $0["error"] == nil })
        #expect(replay.map { $0.dataObject.withoutLocationCount } == first.map { $0.dataObject.withoutLocationCount })
        #expect(replay.map { $0.dataObject.int("version") } == first.map { $0.dataObject.int("version") })
        #expect(try client.listCategories() == categoriesBefore)
        #expect(try client.listLocations() == locationsBefore)
        let after = try client.page(since: cursor)
        #expect(after.changes.isEmpty && !after.hasMore)
    }

    @Test("replaying a batch whose later item superseded an earlier one reports the earlier one as a conflict")
    func supersededReplay() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let client = try SyncTestClient(server)
        let id = UUID()
        let batch = [
            C.change("category", "create", C.category(id, name: "One", at: 5)),
            C.change("category", "update", C.category(id, name: "Two", at: 6)),
        ]
        let first = try client.pushResults(batch)
        #expect(first.map { $0.string("status") } == ["applied", "applied"])
        #expect(first.map { $0.dataObject.int("version") } == [1, 2])
        let cursor = try client.drain(limit: 100).cursor
        let replay = try client.pushResults(batch)
        #expect(replay.map { $0.string("status") } == ["conflict", "applied"])
        #expect(replay[0].resultErrorCode == "E008")
        #expect(replay[0].dataObject.string("name") == "Two" && replay[0].dataObject.int("version") == 2)
        #expect(replay[1].dataObject.int("version") == 2)
        #expect(try client.page(since: cursor).changes.isEmpty)
    }

    @Test("a change older than a tombstone is a conflict whose data is the tombstone")
    func conflictWithTombstone() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let client = try SyncTestClient(server)
        let id = UUID()
        let cafe = DefaultCategories.all[1].id
        let first = try client.pushResults([
            C.change("location", "create", C.location(id, category: cafe, name: "Short-lived", at: 1)),
            C.change("location", "delete", C.deletion(id, at: 9)),
        ])
        #expect(first[1].dataObject == ["id": .string(id.lowercasedString), "deleted": true, "deleted_at": .string(C.time(9))])
        let results = try client.pushResults([
            C.change("location", "update", C.location(id, category: cafe, name: "Edited offline", at: 5)),
            C.change("location", "create", C.location(id, category: cafe, name: "Same time as the delete", at: 9)),
            C.change("location", "delete", C.deletion(id, at: 3)),
        ])
        #expect(results.map { $0.string("status") } == ["conflict", "conflict", "applied"])
        for result in results {
            #expect(result.dataObject == ["id": .string(id.lowercasedString), "deleted": true, "deleted_at": .string(C.time(9))])
        }
        #expect(results.prefix(2).allSatisfy { $0.resultErrorCode == "E008" })
        // Newer than the tombstone: the record comes back, version 3.
        let revived = try client.pushResults([C.change("location", "update", C.location(id, category: cafe, name: "Back", at: 10))])
        #expect(revived.first?.string("status") == "applied" && revived.first?.dataObject.int("version") == 3)
    }

    @Test("an item with an unknown type or action, or that is not an object, fails alone with E001")
    func malformedItems() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let client = try SyncTestClient(server)
        let good = UUID()
        let changes: [JSONValue] = [
            "not a change",
            42,
            nil,
            ["type": "tag", "action": "create", "data": ["id": .string(UUID().uuidString), "name": "x"]],
            ["type": "category", "action": "upsert", "data": ["id": .string(UUID().uuidString), "name": "x"]],
            ["type": "category", "action": "create", "data": "not an object"],
            ["type": "category", "action": "create"],
            ["type": 7, "action": "create", "data": ["id": .string(UUID().uuidString), "name": "x"]],
            C.change("category", "create", C.category(good, name: "Good", at: 1)),
        ]
        let results = try client.pushResults(changes)
        guard results.count == changes.count else { return }
        #expect(results.map { $0.string("status") } == Array(repeating: "error", count: 8) + ["applied"])
        #expect(results.map(\.resultErrorCode) == Array(repeating: "E001", count: 6) + ["E004", "E001", nil])
        #expect(results[3].string("type") == "tag")
        #expect(results[0]["type"] == .null && results[0]["id"] == .null)
        #expect(results[8].string("id") == good.lowercasedString)
        #expect(try client.get("category", good).status == 200)
    }

    @Test("a category delete in a push wakes the clean-up worker, as the single-record delete does")
    func pushedDeleteWakesCleanup() throws {
        let server = try TestServer.start(.inProcess, dependencies: { $0.cleanupSettings.pollInterval = .seconds(3600) })
        defer { server.stop() }
        let client = try SyncTestClient(server)
        let (category, location) = (UUID(), UUID())
        let object = "locations/\(client.uid)/\(location.lowercasedString)/photo.jpg"
        server.fake.addObjects([object], bucket: TestConstants.bucket)
        _ = try client.pushResults([
            C.change("category", "create", C.category(category, name: "Doomed", at: 1)),
            C.change("location", "create", C.location(location, category: category, name: "Pictured", at: 1)),
        ])
        let results = try client.pushResults([C.change("category", "delete", C.deletion(category, at: 2))])
        #expect(results.first?.string("status") == "applied")
        // The worker polls once an hour here: only a wake-up gets the folder deleted now.
        let deadline = Date().addingTimeInterval(30)
        while !server.fake.deletions.contains(where: { $0.name == object }), Date() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
        }
        #expect(server.fake.deletions.contains(FakeGoogle.Deletion(bucket: TestConstants.bucket, name: object)))
    }

    @Test("a token issued before the account was deleted is refused (401 E005) whatever the batch holds")
    func revokedToken() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let client = try SyncTestClient(server)
        #expect(try client.pushResults([C.change("category", "create", C.category(UUID(), name: "Before", at: 1))]).count == 1)
        #expect(try server.request("DELETE", "/v1/users/me", token: client.token).status == 204)
        let batches: [[JSONValue]] = [
            [], ["not a change"], [C.change("category", "create", C.category(UUID(), name: "After", at: 2))],
            Array(repeating: C.change("category", "create", C.category(UUID(), name: "Too many", at: 2)), count: 51),
        ]
        for batch in batches {
            let response = try client.push(batch)
            #expect(response.status == 401 && response.errorCode == "E005", "batch of \(batch.count)")
        }
        let pulled = try client.pull()
        #expect(pulled.status == 401 && pulled.errorCode == "E005")
    }

    @Test("a push body without changes is E004, a non-array E001, bad JSON E001, a non-JSON media type 415 E012")
    func bodyErrors() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let client = try SyncTestClient(server)
        var response = try server.request("POST", "/v1/sync/push", token: client.token, json: ["other": 1])
        #expect(response.status == 400 && response.errorCode == "E004" && response.errorField == "changes")
        response = try server.request("POST", "/v1/sync/push", token: client.token, json: ["changes": nil])
        #expect(response.status == 400 && response.errorCode == "E004")
        for notArray: JSONValue in [["a": 1], "changes", 3, true] {
            response = try server.request("POST", "/v1/sync/push", token: client.token, json: ["changes": notArray])
            #expect(response.status == 400 && response.errorCode == "E001" && response.errorField == "changes")
        }
        response = try server.request("POST", "/v1/sync/push", token: client.token, json: [["changes": []]])
        #expect(response.status == 400 && response.errorCode == "E001")
        response = try server.request(
            "POST", "/v1/sync/push", token: client.token, body: Array(#"{"changes": [}"#.utf8),
            headers: [("Content-Type", "application/json")])
        #expect(response.status == 400 && response.errorCode == "E001")
        response = try server.request("POST", "/v1/sync/push", token: client.token)
        #expect(response.status == 400 && response.errorCode == "E001")
        response = try server.request(
            "POST", "/v1/sync/push", token: client.token, body: Array(#"{"changes": []}"#.utf8),
            headers: [("Content-Type", "text/plain")])
        #expect(response.status == 415 && response.errorCode == "E012")
        response = try server.request("POST", "/v1/sync/push", json: ["changes": []])
        #expect(response.status == 401 && response.errorCode == "E005")
        response = try server.request("POST", "/v1/sync/push", token: client.token, json: ["changes": []])
        #expect(response.status == 200 && response.object["results"] == .array([]))
    }
}
