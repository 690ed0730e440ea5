import Foundation
import JSON
import LocifyRules
import Testing
import TestSupport
import TestSupportServer

// Last write wins field by field (issue 36; openapi.yaml, "Writes in any order"): two devices
// that edit different fields of one record offline both keep their edits, through PATCH and
// through push `patch`; the change feed carries each field's stamp.

/// A user with one category and one location created at minute 0 (the location named "Place",
/// not a favourite, at the default coordinates).
private struct PlaceFixture {
    let user: APIUser
    let client: SyncTestClient
    let category = newID()
    let location = newID()

    init() throws {
        user = try APIUser.fresh()
        client = try SyncTestClient(user.server, uid: user.uid)
        try user.createCategory(category, name: "Food", updatedAtMinute: 0)
        try user.createLocation(location, in: category, name: "Place", ["updated_at": .string(clientTime(0))])
    }

    func patchLocation(_ fields: JSONObject, minute: Int?) throws -> TestResponse {
        var body = fields
        if let minute { body["updated_at"] = .string(clientTime(minute)) }
        return try user.send("PATCH", "/v1/locations/\(location)", json: .object(body))
    }

    /// A push `patch` change of the location.
    func pushPatch(_ fields: JSONObject, minute: Int) -> JSONValue {
        var data = fields
        data["id"] = .string(location)
        data["updated_at"] = .string(clientTime(minute))
        return ["type": "location", "action": "patch", "data": .object(data)]
    }

    func stored() throws -> JSONObject { try user.get("/v1/locations/\(location)").object }
}

@Suite("Field-level last write wins: PATCH, push patch and the feed's field stamps (issue 36)")
struct FieldMergeTests {
    @Test("a rename on one device and a favourite on the other, both offline, both stay (PATCH, in either arrival order)")
    func renameAndFavouriteThroughPatch() throws {
        for renameFirst in [true, false] {
            let place = try PlaceFixture()
            let rename = { try place.patchLocation(["name": "Renamed"], minute: 2) }
            let favourite = { try place.patchLocation(["is_favorite": true], minute: 1) }
            let answers = renameFirst ? [try rename(), try favourite()] : [try favourite(), try rename()]
            for answer in answers { #expect(answer.status == 200, "\(answer.text)") }
            let record = try place.stored()
            #expect(record.string("name") == "Renamed")
            #expect(record["is_favorite"] == .bool(true))
            #expect(record.string("updated_at") == clientTime(2))
            #expect(record.int("version") == 3)
            #expect(answers.last?.object == record, "the answer is the merged record")
        }
    }

    @Test("the same scenario through push patch keeps both edits, and a whole update older than the rename keeps it")
    func renameAndFavouriteThroughPush() throws {
        let place = try PlaceFixture()
        let results = try place.client.pushResults([
            place.pushPatch(["name": "Renamed"], minute: 2), place.pushPatch(["is_favorite": true], minute: 1),
        ])
        #expect(results.map { $0.string("status") } == ["applied", "applied"])
        #expect(results[1].dataObject.string("name") == "Renamed")
        // Each applied record carries its fields' stamps, as the feed does: the device that
        // pushed decides its edits made meanwhile on top of them, not on top of `updated_at`.
        let at0 = clientTime(0)
        #expect(
            results[1]["field_updated_at"]?.objectValue
                == [
                    "category_id": .string(at0), "name": .string(clientTime(2)), "address": .string(at0),
                    "description": .string(at0), "coordinates": .string(at0), "is_favorite": .string(clientTime(1)),
                    "image_urls": .string(at0),
                ])
        var record = try place.stored()
        #expect(record.string("name") == "Renamed" && record["is_favorite"] == .bool(true))
        // A whole write at minute 1.5 sets the fields older than it (the address) and keeps the
        // newer rename: an edit is never undone by an older one.
        let put = try place.user.put(
            "/v1/locations/\(place.location)",
            locationBody(
                id: place.location, categoryID: place.category, name: "Old name",
                ["address": "1 Main St", "updated_at": .string(clientTime(1, milliseconds: 30_000))]))
        #expect(put.status == 200, "\(put.text)")
        record = try place.stored()
        #expect(record.string("name") == "Renamed" && record.string("address") == "1 Main St")
        #expect(record["is_favorite"] == .bool(false), "the whole write is newer than the favourite")
    }

    @Test("a patch of an id never created is 404 E007, through PATCH and push")
    func patchOfUnknownID() throws {
        let place = try PlaceFixture()
        let unknown = newID()
        expectError(try place.user.send("PATCH", "/v1/locations/\(unknown)", json: ["name": "x"]), 404, "E007")
        expectError(try place.user.send("PATCH", "/v1/categories/\(unknown)", json: ["name": "x"]), 404, "E007")
        let results = try place.client.pushResults([
            ["type": "category", "action": "patch", "data": ["id": .string(unknown), "name": "x"]]
        ])
        #expect(results.first?.string("status") == "error")
        #expect(results.first?["error"]?.objectValue?.string("code") == "E007")
    }

    @Test("a patch that sets nothing is 409 E008 with the server's record; its replay is 200, unchanged")
    func conflictAndReplay() throws {
        let place = try PlaceFixture()
        let applied = try place.patchLocation(["name": "Renamed", "is_favorite": true], minute: 2)
        #expect(applied.status == 200)
        // Older on every field it carries.
        let older = try place.patchLocation(["name": "Older"], minute: 1)
        expectConflict(older, data: try place.stored())
        // The retry of the applied patch, also after a newer write set one of its fields.
        #expect(try place.patchLocation(["is_favorite": false], minute: 3).status == 200)
        let replay = try place.patchLocation(["name": "Renamed", "is_favorite": true], minute: 2)
        #expect(replay.status == 200, "\(replay.text)")
        #expect(replay.object == (try place.stored()))
        #expect(replay.object.int("version") == 3, "nothing stored")
        // Same time, another value on every field carried: 409.
        expectConflict(try place.patchLocation(["name": "Other"], minute: 2), data: try place.stored())
        let pushed = try place.client.pushResults([place.pushPatch(["name": "Older"], minute: 1)])
        #expect(pushed.first?.string("status") == "conflict")
        #expect(pushed.first?.dataObject == (try place.stored()))
    }

    @Test("a patch is validated field by field as a whole write is; null clears an optional field")
    func validation() throws {
        let place = try PlaceFixture()
        let path = "/v1/locations/\(place.location)"
        expectError(try place.user.send("PATCH", path, json: ["updated_at": .string(clientTime(1))]), 400, "E001", field: "body")
        expectError(try place.user.send("PATCH", path, json: ["latitude": 1]), 400, "E001", field: "longitude")
        expectError(try place.user.send("PATCH", path, json: ["latitude": 91, "longitude": 1]), 400, "E003", field: "latitude")
        expectError(try place.user.send("PATCH", path, json: ["name": "  "]), 400, "E001", field: "name")
        expectError(try place.user.send("PATCH", path, json: ["name": .null]), 400, "E004", field: "name")
        expectError(try place.user.send("PATCH", path, json: ["category_id": "nope"]), 400, "E002", field: "category_id")
        expectError(try place.user.send("PATCH", path, json: ["category_id": .string(newID())]), 404, "E007")
        expectError(try place.user.send("PATCH", path, json: ["id": .string(newID()), "name": "x"]), 400, "E001", field: "id")
        expectError(try place.user.send("PATCH", path, json: ["image_urls": ["http://example.com/a.jpg"]]), 400, "E001", field: "image_urls")
        let withAddress = try place.patchLocation(["address": "1 Main St", "description": "Notes"], minute: 1)
        #expect(withAddress.object.string("address") == "1 Main St")
        let cleared = try place.patchLocation(["address": .null, "latitude": 1.5, "longitude": -2.25], minute: 2)
        #expect(cleared.status == 200, "\(cleared.text)")
        #expect(cleared.object["address"] == .null && cleared.object.string("description") == "Notes")
        #expect(cleared.object["latitude"] == .number(1.5) && cleared.object["longitude"] == .number(-2.25))
        let category = "/v1/categories/\(place.category)"
        expectError(try place.user.send("PATCH", category, json: [:]), 400, "E001", field: "body")
        let icon = try place.user.send("PATCH", category, json: ["icon": "https://example.com/i.png"])
        #expect(icon.status == 200 && icon.object.string("name") == "Food" && icon.object.string("icon") == "https://example.com/i.png")
        #expect(try place.user.send("PATCH", category, json: ["icon": .null]).object["icon"] == .null)
    }

    @Test("a field patched behind a tombstone is kept, hidden, and shows when a newer write brings the record back")
    func hiddenFieldsComeBack() throws {
        let place = try PlaceFixture()
        expectNoContent(try place.user.delete("/v1/locations/\(place.location)?updated_at=" + queryEncoded(clientTime(3))))
        let behind = try place.patchLocation(["name": "Renamed at 2"], minute: 2)
        expectConflict(behind, data: tombstoneJSON(id: place.location, deletedAt: clientTime(3)))
        let back = try place.patchLocation(["is_favorite": true], minute: 4)
        #expect(back.status == 200, "\(back.text)")
        #expect(back.object.string("name") == "Renamed at 2" && back.object["is_favorite"] == .bool(true))
        #expect(back.object.string("category_id") == place.category)
    }

    @Test("a patch of a category brings a cascaded location back with it, and a patch moves a location as a whole write does")
    func categoryPlacement() throws {
        let place = try PlaceFixture()
        let other = newID()
        try place.user.createCategory(other, name: "Other", updatedAtMinute: 0)
        let moved = try place.patchLocation(["category_id": .string(other)], minute: 1)
        #expect(moved.object.string("category_id") == other)
        #expect(try place.user.get("/v1/categories/\(other)").object.int("location_count") == 1)
        expectNoContent(try place.user.delete("/v1/categories/\(other)?updated_at=" + queryEncoded(clientTime(2))))
        try place.user.waitForSettledCascades()
        // Into a category deleted with a cascade: E007, but kept (openapi.yaml).
        expectError(try place.patchLocation(["name": "Hidden edit"], minute: 3), 404, "E007")
        let back = try place.user.send("PATCH", "/v1/categories/\(other)", json: ["name": "Back", "updated_at": .string(clientTime(4))])
        #expect(back.status == 200, "\(back.text)")
        let record = try place.stored()
        #expect(record.string("name") == "Hidden edit" && record.string("category_id") == other)
    }

    @Test("every upsert of the feed carries each field's stamp; deletes and single-record reads carry none")
    func feedFieldStamps() throws {
        let place = try PlaceFixture()
        let start = try place.client.drain(limit: 1000).cursor
        #expect(try place.patchLocation(["name": "Renamed"], minute: 2).status == 200)
        let deleted = newID()
        try place.user.createCategory(deleted, name: "Gone", updatedAtMinute: 0)
        expectNoContent(try place.user.delete("/v1/categories/\(deleted)?reassign_category_id=\(place.category)"))
        let changes = try place.client.drain(since: start, limit: 1000).pages.flatMap(\.changes)
        let location = try #require(changes.first { $0.string("id") == place.location })
        let at0 = clientTime(0)
        #expect(
            location["field_updated_at"]?.objectValue
                == [
                    "category_id": .string(at0), "name": .string(clientTime(2)), "address": .string(at0),
                    "description": .string(at0), "coordinates": .string(at0), "is_favorite": .string(at0), "image_urls": .string(at0),
                ])
        let tombstone = try #require(changes.first { $0.string("id") == deleted })
        #expect(tombstone.string("action") == "delete" && tombstone["field_updated_at"] == nil)
        let snapshot = try place.client.drain(limit: 1000).pages.flatMap(\.changes)
        let category = try #require(snapshot.first { $0.string("id") == place.category })
        #expect(category["field_updated_at"]?.objectValue == ["name": .string(at0), "icon": .string(at0)])
        #expect(try place.stored()["field_updated_at"] == nil)
        #expect(try place.user.get("/v1/locations").object["data"]?.arrayValue?.first?.objectValue?["field_updated_at"] == nil)
    }
}

/// One write of the arrival-order property: a whole `PUT`, a `PATCH` (or push `patch`) of some
/// fields, or a `DELETE`, of the fixture's location, at a minute of the client clock.
private struct MergeWrite: CustomStringConvertible {
    enum Kind { case whole, patch, delete }
    let kind: Kind
    let minute: Int
    /// The values it carries: name, address, favourite (a patch carries some of them).
    var name: String?
    var address: String?
    var isFavorite: Bool?

    var description: String {
        "\(kind)@\(minute)" + [name.map { " name=\($0)" }, address.map { " address=\($0)" }, isFavorite.map { " fav=\($0)" }]
            .compactMap { $0 }.joined()
    }

    /// A random write at `minute`: each value one of two, a patch of a non-empty subset.
    static func random(minute: Int, using generator: inout SeededGenerator) -> MergeWrite {
        let kind = [Kind.whole, .patch, .patch, .delete].randomElement(using: &generator) ?? .patch
        var write = MergeWrite(kind: kind, minute: minute)
        guard kind != .delete else { return write }
        repeat {
            if kind == .whole || Bool.random(using: &generator) { write.name = ["a", "b"].randomElement(using: &generator) }
            if kind == .whole || Bool.random(using: &generator) { write.address = ["x", "y"].randomElement(using: &generator) }
            if kind == .whole || Bool.random(using: &generator) { write.isFavorite = Bool.random(using: &generator) }
        } while write.name == nil && write.address == nil && write.isFavorite == nil
        return write
    }

    /// The fields it carries, with the values the rule compares; a whole write carries the
    /// fixture's other fields unchanged.
    var values: [LocationField: String] {
        var values: [LocationField: String] = [:]
        if kind == .whole {
            for field in LocationField.allCases { values[field] = "unchanged" }
            values[.address] = "null"
            values[.isFavorite] = "false"
        }
        if let name { values[.name] = name }
        if let address { values[.address] = address }
        if let isFavorite { values[.isFavorite] = String(isFavorite) }
        return values
    }
}

/// The fixture's location as the rule predicts it: each field's value and the clock.
private struct PredictedPlace: Equatable, CustomStringConvertible {
    var clock = FieldLastWriteWins<LocationField>.Clock(writtenWhole: Timestamp(rfc3339: clientTime(0)) ?? .epoch)
    var values: [LocationField: String] = Dictionary(
        LocationField.allCases.map { ($0, "unchanged") } + [(.name, "Place"), (.address, "null"), (.isFavorite, "false")],
        uniquingKeysWith: { $1 })

    /// Decides `write` with `FieldLastWriteWins` and applies it; returns the status the API must answer.
    mutating func apply(_ write: MergeWrite) -> Int {
        let carried = write.values
        let intent: FieldLastWriteWins<LocationField>.Intent =
            switch write.kind {
            case .whole: .replace
            case .patch: .patch(Set(carried.keys))
            case .delete: .delete
            }
        let decision = FieldLastWriteWins.decide(
            intent, stored: clock, requested: Timestamp(rfc3339: clientTime(write.minute)), now: Timestamp(milliseconds: .max),
            sameValue: { values[$0] == carried[$0] })
        if decision.changesRecord, let after = decision.clock {
            for field in decision.setting { values[field] = carried[field] }
            clock = after
        }
        switch decision.outcome {
        case .inserted: return 201
        case .updated, .replayed: return 200
        case .deleted, .alreadyDeleted: return 204
        case .conflict: return 409
        case .notFound: return 404
        }
    }

    /// What the feed reports: the tombstone's time, or the shown fields with their stamps.
    var summary: String {
        if let deletedAt = clock.deletedAt { return "deleted at \(deletedAt.rfc3339)" }
        let shown: [LocationField] = [.name, .address, .isFavorite]
        return shown.map { "\($0)=\(values[$0] ?? "")@\(clock[$0].rfc3339)" }.joined(separator: " ")
            + " updated_at=\(clock.updatedAt.rfc3339)"
    }

    var description: String { summary }
}

@Suite("Field-level last write wins in any arrival order, through the API (issue 36)")
struct FieldMergeOrderTests {
    /// The feed's last word on the fixture's location, in `PredictedPlace.summary`'s form.
    private static func feedSummary(_ changes: [JSONObject], location: String) -> String {
        guard let change = changes.last(where: { $0.string("id") == location }) else { return "absent" }
        if change.string("action") == "delete" { return "deleted at " + change.string("deleted_at") }
        let data = change.dataObject
        let stamps = change["field_updated_at"]?.objectValue ?? [:]
        let address = data["address"]?.stringValue ?? "null"
        let favourite = data["is_favorite"]?.boolValue.map(String.init) ?? "?"
        return "name=\(data.string("name"))@\(stamps.string("name")) address=\(address)@\(stamps.string("address")) "
            + "isFavorite=\(favourite)@\(stamps.string("is_favorite")) updated_at=\(data.string("updated_at"))"
    }

    /// Sends `write` as the API's call or as a one-change push; returns the status it stands for.
    private static func send(_ write: MergeWrite, _ place: PlaceFixture, push: Bool) throws -> Int {
        var fields: JSONObject = [:]
        if let name = write.name { fields["name"] = .string(name) }
        if let address = write.address { fields["address"] = .string(address) }
        if let isFavorite = write.isFavorite { fields["is_favorite"] = .bool(isFavorite) }
        switch (write.kind, push) {
        case (.delete, _):
            return try place.user.delete("/v1/locations/\(place.location)?updated_at=" + queryEncoded(clientTime(write.minute))).status
        case (.whole, _):
            fields["updated_at"] = .string(clientTime(write.minute))
            let body = locationBody(id: place.location, categoryID: place.category, name: write.name, fields)
            return try place.user.put("/v1/locations/\(place.location)", body).status
        case (.patch, false):
            return try place.patchLocation(fields, minute: write.minute).status
        case (.patch, true):
            let result = try place.client.pushResults([place.pushPatch(fields, minute: write.minute)]).first
            switch result?.string("status") {
            case "applied": return 200
            case "conflict": return 409
            default: return result?["error"]?.objectValue?.string("code") == "E007" ? 404 : 400
            }
        }
    }

    @Test(
        "every arrival order of random whole writes, patches and deletes of one place answers and ends as the rule predicts, in one same state",
        arguments: 1...6)
    func arrivalOrders(seed: UInt64) throws {
        var generator = SeededGenerator(seed: seed)
        let count = seed % 3 == 0 ? 4 : 3
        let minutes = Array((1...6).shuffled(using: &generator).prefix(Int(count)))
        let writes = minutes.map { MergeWrite.random(minute: $0, using: &generator) }
        var ends: Set<String> = []
        for (number, order) in permutations(of: writes.indices.map { $0 }).enumerated() {
            let place = try PlaceFixture()
            let start = try place.client.drain(limit: 1000).cursor
            var predicted = PredictedPlace()
            for (index, position) in order.enumerated() {
                let write = writes[position]
                let expected = predicted.apply(write)
                let status = try Self.send(write, place, push: (number + index) % 2 == 1)
                #expect(status == expected, "seed \(seed), order \(order.map { writes[$0] }): \(write)")
            }
            let ended = Self.feedSummary(try place.client.drain(since: start, limit: 1000).pages.flatMap(\.changes), location: place.location)
            #expect(ended == predicted.summary, "seed \(seed), order \(order.map { writes[$0] })")
            ends.insert(ended)
        }
        #expect(ends.count == 1, "seed \(seed): \(writes) ended in \(ends)")
    }
}
