import Foundation
import JSON
import Testing
import TestSupport
import TestSupportServer

/// A write path a location body can be sent on: the same field rules hold for each.
enum LocationWritePath: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case post = "POST /v1/locations"
    case putBody = "PUT /v1/locations"
    case putPath = "PUT /v1/locations/{id}"

    var testDescription: String { rawValue }

    func send(_ user: APIUser, id: String, _ body: JSONValue) throws -> TestResponse {
        switch self {
        case .post: return try user.post("/v1/locations", body)
        case .putBody: return try user.put("/v1/locations", body)
        case .putPath: return try user.put("/v1/locations/\(id)", body)
        }
    }
}

/// A user with one category and, for the PUT paths, one existing location to write to.
struct LocationFixture {
    let user: APIUser
    let categoryID: String
    let id: String
    let path: LocationWritePath

    init(_ path: LocationWritePath) throws {
        user = try APIUser.fresh()
        categoryID = newID()
        id = newID()
        self.path = path
        try user.createCategory(categoryID, name: "Home")
        if path != .post {
            try user.createLocation(id, in: categoryID, ["updated_at": .string(clientTime(0))])
        }
    }

    /// A valid body for the fixture's location at client minute `minute`, with `extra` members.
    func body(minute: Int = 1, _ extra: JSONObject = [:]) -> JSONValue {
        var members = extra
        if members["updated_at"] == nil { members["updated_at"] = .string(clientTime(minute)) }
        return locationBody(id: id, categoryID: categoryID, members)
    }

    func send(_ body: JSONValue) throws -> TestResponse { try path.send(user, id: id, body) }

    /// The status an accepted write answers on this path (201 for the first POST).
    func acceptedStatus(first: Bool) -> Int { path == .post && first ? 201 : 200 }
}

@Suite("Locations over HTTP: every row of the field table (openapi.yaml)")
struct LocationsFieldTests {
    @Test("a create answers 201 with the full record: lower-case ids, trimmed name, every optional field defaulted")
    func createAnswersFullRecord() throws {
        let user = try APIUser.fresh()
        let categoryID = UUID().uuidString
        try user.createCategory(categoryID, name: "Sights")
        let id = UUID().uuidString
        let response = try user.post(
            "/v1/locations",
            locationBody(id: id, categoryID: categoryID, name: " Eiffel Tower\u{3000}", ["updated_at": .string(clientTime(0))]))
        expectRecord(
            response, 201,
            locationJSON(
                id: id.lowercased(), user: user, categoryID: categoryID.lowercased(), name: "Eiffel Tower",
                createdAt: clientTime(0), updatedAt: clientTime(0)))
        expectRecord(try user.get("/v1/locations/\(id)"), 200, response.object)
    }

    @Test("a create with every field set returns each one as sent")
    func createWithEveryField() throws {
        let user = try APIUser.fresh()
        let categoryID = newID()
        try user.createCategory(categoryID)
        let id = newID()
        let urls = (1...10).map { "https://example.com/\($0).jpg" }
        let body = locationBody(
            id: id, categoryID: categoryID, name: "Full", latitude: -33.856784, longitude: 151.215297,
            [
                "address": "Bennelong Point\nSydney NSW 2000", "description": "Opera\tHouse\r\nTours", "is_favorite": true,
                "image_urls": .array(urls.map(JSONValue.string)), "created_at": .string(clientTime(-1)), "updated_at": .string(clientTime(0)),
            ])
        expectRecord(
            try user.post("/v1/locations", body), 201,
            locationJSON(
                id: id, user: user, categoryID: categoryID, name: "Full", address: "Bennelong Point\nSydney NSW 2000",
                description: "Opera\tHouse\r\nTours", latitude: -33.856784, longitude: 151.215297, isFavorite: true, imageURLs: urls,
                createdAt: clientTime(-1), updatedAt: clientTime(0)))
    }

    @Test("id: absent or null is E004, a non-string E001, a malformed UUID E002")
    func idRules() throws {
        let fixture = try LocationFixture(.post)
        let user = fixture.user
        let body = fixture.body()
        expectError(try user.post("/v1/locations", removing("id", from: body)), 400, "E004", field: "id")
        expectError(try user.post("/v1/locations", setting("id", nil, in: body)), 400, "E004", field: "id")
        expectError(try user.post("/v1/locations", setting("id", 5, in: body)), 400, "E001", field: "id")
        expectError(try user.post("/v1/locations", setting("id", "x", in: body)), 400, "E002", field: "id")
        expectError(try user.post("/v1/locations", setting("id", "\u{0}", in: body)), 400, "E002", field: "id")
        expectError(try user.put("/v1/locations", removing("id", from: body)), 400, "E004", field: "id")
        expectError(try user.put("/v1/locations/zzz", removing("id", from: body)), 400, "E002", field: "id")
        #expect(try user.get("/v1/locations").meta["total_count"] == 0)
    }

    @Test("user_id: the caller's own id is accepted, another user's is E006, a non-string E001", arguments: LocationWritePath.allCases)
    func userIDRules(path: LocationWritePath) throws {
        let fixture = try LocationFixture(path)
        expectError(try fixture.send(fixture.body(["user_id": "intruder"])), 403, "E006", field: "user_id")
        expectError(try fixture.send(fixture.body(["user_id": ["a"]])), 400, "E001", field: "user_id")
        let accepted = try fixture.send(fixture.body(["user_id": .string(fixture.user.uid)]))
        #expect(accepted.status == fixture.acceptedStatus(first: true) && accepted.object["user_id"]?.stringValue == fixture.user.uid)
    }

    @Test("category_id: absent or null is E004, a non-string E001, a malformed UUID E002", arguments: LocationWritePath.allCases)
    func categoryIDFormat(path: LocationWritePath) throws {
        let fixture = try LocationFixture(path)
        expectError(try fixture.send(removing("category_id", from: fixture.body())), 400, "E004", field: "category_id")
        expectError(try fixture.send(setting("category_id", nil, in: fixture.body())), 400, "E004", field: "category_id")
        expectError(try fixture.send(setting("category_id", 3, in: fixture.body())), 400, "E001", field: "category_id")
        expectError(try fixture.send(setting("category_id", "cafe", in: fixture.body())), 400, "E002", field: "category_id")
        expectError(
            try fixture.send(setting("category_id", .string(fixture.categoryID + " "), in: fixture.body())), 400, "E002",
            field: "category_id")
    }

    @Test("category_id: unknown or another user's category is E007 and nothing is written; a deleted one E007, the write kept", arguments: LocationWritePath.allCases)
    func categoryIDMustBeLive(path: LocationWritePath) throws {
        let fixture = try LocationFixture(path)
        let user = fixture.user
        let other = try APIUser.fresh()
        let othersCategory = newID()
        try other.createCategory(othersCategory)
        for categoryID in [newID(), othersCategory] {
            expectError(try fixture.send(setting("category_id", .string(categoryID), in: fixture.body())), 404, "E007")
        }
        let locations = try user.get("/v1/locations")
        #expect(locations.meta["total_count"] == (path == .post ? 0 : 1))
        if path != .post {
            #expect(locations.data.first?.objectValue?["version"] == 1, "the stored location is untouched")
        }
        #expect(try other.get("/v1/categories/\(othersCategory)").object["location_count"] == 0)

        // A category deleted with a cascade: E007, and the write is kept, shown deleted until the
        // category comes back (openapi.yaml, "Writes in any order").
        let deleted = newID()
        try user.createCategory(deleted, name: "Deleted", updatedAtMinute: 0)
        expectNoContent(try user.delete("/v1/categories/\(deleted)?updated_at=\(clientTime(1))"))
        expectError(try fixture.send(setting("category_id", .string(deleted), in: fixture.body())), 404, "E007")
        #expect(try user.get("/v1/locations").meta["total_count"] == 0)
        #expect(try user.put("/v1/categories/\(deleted)", categoryBody(id: deleted, ["updated_at": .string(clientTime(2))])).status == 200)
        let back = try user.get("/v1/locations")
        #expect(back.meta["total_count"] == 1 && back.data.first?.objectValue?["category_id"]?.stringValue == deleted)
    }

    @Test("category_id: upper-case input is stored and returned lower-case", arguments: LocationWritePath.allCases)
    func categoryIDCase(path: LocationWritePath) throws {
        let fixture = try LocationFixture(path)
        let response = try fixture.send(setting("category_id", .string(fixture.categoryID.uppercased()), in: fixture.body()))
        #expect(response.status == fixture.acceptedStatus(first: true), "\(response.text)")
        #expect(response.object["category_id"]?.stringValue == fixture.categoryID)
        #expect(response.object["id"]?.stringValue == fixture.id)
    }

    @Test("name: absent or null E004, non-string E001, trimmed, 1-255 code points, no control characters", arguments: LocationWritePath.allCases)
    func nameRules(path: LocationWritePath) throws {
        let fixture = try LocationFixture(path)
        expectError(try fixture.send(removing("name", from: fixture.body())), 400, "E004", field: "name")
        expectError(try fixture.send(setting("name", nil, in: fixture.body())), 400, "E004", field: "name")
        expectError(try fixture.send(setting("name", 1, in: fixture.body())), 400, "E001", field: "name")
        for bad in ["", "  \u{3000}", String(repeating: "n", count: 256), String(repeating: "o\u{308}", count: 128), "a\u{0}b", "a\nb", "\u{7F}", "x\u{9B}"] {
            expectError(try fixture.send(setting("name", .string(bad), in: fixture.body())), 400, "E001", field: "name")
        }
        let longest = String(repeating: "\u{4E16}", count: 255)
        let response = try fixture.send(setting("name", .string("\u{A0}\(longest)\t"), in: fixture.body()))
        #expect(response.status == fixture.acceptedStatus(first: true) && response.object["name"]?.stringValue == longest, "\(response.text)")
    }

    @Test("address and description: null, absent, empty or whitespace-only are null; up to 1000 code points; tab, LF and CR allowed", arguments: ["address", "description"])
    func longTextAccepted(field: String) throws {
        let fixture = try LocationFixture(.post)
        var first = true
        var minute = 0
        func write(_ value: JSONValue?) throws -> TestResponse {
            minute += 1
            var extra: JSONObject = [:]
            if let value { extra[field] = value }
            let response = try fixture.send(fixture.body(minute: minute, extra))
            #expect(response.status == fixture.acceptedStatus(first: first), "\(response.text)")
            first = false
            return response
        }
        for nullish: JSONValue? in [nil, .null, "", " ", "\t\n\r ", "\u{3000}\u{A0}"] {
            #expect(try write(nullish).object[field] == .null, "\(String(describing: nullish)) is stored as null")
        }
        let kept = [
            "Line 1\nLine 2\r\n\tIndented", String(repeating: "\u{E9}", count: 1000), String(repeating: "\u{1F30D}", count: 1000),
            "  padded  ", "100% _literal_",
        ]
        for text in kept {
            #expect(try write(.string(text)).object[field]?.stringValue == text)
        }
    }

    @Test("address and description: over 1000 code points, control characters other than tab/LF/CR (NUL included), or not a string is E001", arguments: ["address", "description"])
    func longTextRefused(field: String) throws {
        for path in LocationWritePath.allCases {
            let fixture = try LocationFixture(path)
            let refused: [JSONValue] = [
                .string(String(repeating: "a", count: 1001)), .string(String(repeating: "e\u{301}", count: 501)), "a\u{0}b", "\u{0}",
                "bell\u{7}", "\u{1B}[31m", "del\u{7F}", "c1\u{80}", "c1\u{9F}", "\u{B}vertical tab", "\u{C}form feed", 42, false,
                ["text"], ["k": "v"],
            ]
            for value in refused {
                expectError(try fixture.send(fixture.body([field: value])), 400, "E001", field: field)
            }
        }
    }

    @Test("latitude and longitude: absent or null E004, non-number E001, outside [-90, 90] / [-180, 180] E003; the bounds are accepted", arguments: LocationWritePath.allCases)
    func coordinateRules(path: LocationWritePath) throws {
        let fixture = try LocationFixture(path)
        for field in ["latitude", "longitude"] {
            expectError(try fixture.send(removing(field, from: fixture.body())), 400, "E004", field: field)
            expectError(try fixture.send(setting(field, nil, in: fixture.body())), 400, "E004", field: field)
            for wrong: JSONValue in ["48.85", true, [1], ["v": 1]] {
                expectError(try fixture.send(setting(field, wrong, in: fixture.body())), 400, "E001", field: field)
            }
        }
        for latitude in [90.000001, -90.000001, 91, -1000, 1e300] {
            expectError(try fixture.send(setting("latitude", .number(latitude), in: fixture.body())), 400, "E003", field: "latitude")
        }
        for longitude in [180.000001, -180.000001, 360, 1e300] {
            expectError(try fixture.send(setting("longitude", .number(longitude), in: fixture.body())), 400, "E003", field: "longitude")
        }
        var first = true
        for (minute, point) in [(90.0, 180.0), (-90.0, -180.0), (0.0, 0.0), (-0.5, 179.999999), (12.3456789012345, -98.7654321098765)].enumerated() {
            var body = setting("latitude", .number(point.0), in: fixture.body(minute: minute + 1))
            body = setting("longitude", .number(point.1), in: body)
            let response = try fixture.send(body)
            #expect(response.status == fixture.acceptedStatus(first: first), "\(response.text)")
            #expect(response.object["latitude"] == .number(point.0) && response.object["longitude"] == .number(point.1))
            first = false
        }
    }

    @Test("is_favorite: defaults to false, takes true or false, anything else is E001", arguments: LocationWritePath.allCases)
    func isFavoriteRules(path: LocationWritePath) throws {
        let fixture = try LocationFixture(path)
        for wrong: JSONValue in ["true", 1, 0, ["x"]] {
            expectError(try fixture.send(fixture.body(["is_favorite": wrong])), 400, "E001", field: "is_favorite")
        }
        var first = true
        for (minute, value) in [(JSONValue.bool(true), true), (.bool(false), false), (.bool(true), true), (.null, false)].enumerated() {
            let response = try fixture.send(fixture.body(minute: minute + 1, ["is_favorite": value.0]))
            #expect(response.status == fixture.acceptedStatus(first: first) && response.object["is_favorite"] == .bool(value.1))
            first = false
        }
        let absent = try fixture.send(fixture.body(minute: 10))
        #expect(absent.status == 200 && absent.object["is_favorite"] == false, "a full replacement without it resets it")
    }

    @Test("image_urls: absent or null is [], up to 10 absolute https URLs of at most 2048 characters, order kept", arguments: LocationWritePath.allCases)
    func imageURLsAccepted(path: LocationWritePath) throws {
        let fixture = try LocationFixture(path)
        let long = "https://example.com/" + String(repeating: "p", count: 2028)
        let lists: [[String]] = [
            [], ["https://example.com/a.jpg"], ["HTTPS://EXAMPLE.COM/B.JPG", "https://example.com/b.jpg", long],
            (1...10).reversed().map { "https://cdn.example.com/\($0).png" },
            ["https://firebasestorage.googleapis.com/v0/b/test-bucket/o/locations%2Fu%2Fl%2Fa.jpg?alt=media&token=x"],
        ]
        var first = true
        for (minute, urls) in lists.enumerated() {
            let response = try fixture.send(fixture.body(minute: minute + 1, ["image_urls": .array(urls.map(JSONValue.string))]))
            #expect(response.status == fixture.acceptedStatus(first: first), "\(response.text)")
            #expect(response.object["image_urls"] == .array(urls.map(JSONValue.string)))
            first = false
        }
        let empties: [JSONValue?] = [.null, nil]
        for (minute, empty) in empties.enumerated() {
            var extra: JSONObject = [:]
            if let empty { extra["image_urls"] = empty }
            let response = try fixture.send(fixture.body(minute: 20 + minute, extra))
            #expect(response.status == 200 && response.object["image_urls"] == [], "\(response.text)")
        }
    }

    @Test("image_urls: more than 10, duplicates, a non-https / file: / content: / hostless / whitespace / too long URL, or a wrong type is E001", arguments: LocationWritePath.allCases)
    func imageURLsRefused(path: LocationWritePath) throws {
        let fixture = try LocationFixture(path)
        let refused: [JSONValue] = [
            .array((1...11).map { .string("https://example.com/\($0).jpg") }),
            ["https://example.com/a.jpg", "https://example.com/b.jpg", "https://example.com/a.jpg"],
            ["http://example.com/a.jpg"], ["file:///storage/emulated/0/DCIM/a.jpg"], ["content://media/external/images/media/12"],
            ["https://"], ["https:///a.jpg"], ["https://example.com/a b.jpg"], ["https://example.com/a.jpg\n"],
            ["https://example.com/\u{0}"], [.string("https://example.com/" + String(repeating: "p", count: 2029))], ["a.jpg"],
            "https://example.com/a.jpg", 3, ["k": "v"], [1], [nil], [["https://example.com/a.jpg"]], ["https://example.com/ok.jpg", 2],
        ]
        for value in refused {
            expectError(try fixture.send(fixture.body(["image_urls": value])), 400, "E001", field: "image_urls")
        }
    }

    @Test("sync_status: the four client values are accepted and ignored; anything else is E001")
    func syncStatusRules() throws {
        let fixture = try LocationFixture(.putPath)
        for (minute, status) in ["synced", "pendingCreate", "pendingUpdate", "pendingDelete"].enumerated() {
            let response = try fixture.send(fixture.body(minute: minute + 1, ["sync_status": .string(status)]))
            #expect(response.status == 200 && response.object["sync_status"] == "synced", "\(response.text)")
        }
        for bad: JSONValue in ["pending", "SYNCED", 0, [:]] {
            expectError(try fixture.send(fixture.body(minute: 9, ["sync_status": bad])), 400, "E001", field: "sync_status")
        }
    }

    @Test("read-only fields are never taken from the client; unknown fields are ignored")
    func readOnlyAndUnknownFields() throws {
        let user = try APIUser.fresh()
        let categoryID = newID()
        try user.createCategory(categoryID)
        let id = newID()
        let extra: JSONObject = [
            "version": 7, "sync_status": "pendingUpdate", "location_count": 3, "deleted": true, "rating": 5, "tags": ["x"],
            "created_at": .string(clientTime(-2)), "updated_at": .string(clientTime(0)),
        ]
        expectRecord(
            try user.post("/v1/locations", locationBody(id: id, categoryID: categoryID, extra)), 201,
            locationJSON(id: id, user: user, categoryID: categoryID, createdAt: clientTime(-2), updatedAt: clientTime(0)))
        var update = extra
        update["created_at"] = .string(clientTime(-50))
        update["updated_at"] = .string(clientTime(1))
        expectRecord(
            try user.put("/v1/locations", locationBody(id: id, categoryID: categoryID, update)), 200,
            locationJSON(id: id, user: user, categoryID: categoryID, version: 2, createdAt: clientTime(-2), updatedAt: clientTime(1)))
    }

    @Test("NUL or other control characters in any string field are a 400, never a 500")
    func controlCharactersEverywhere() throws {
        let fixture = try LocationFixture(.post)
        let fields: [(String, String)] = [
            ("id", "E002"), ("category_id", "E002"), ("name", "E001"), ("address", "E001"), ("description", "E001"),
            ("updated_at", "E001"), ("created_at", "E001"), ("sync_status", "E001"), ("user_id", "E006"),
        ]
        for (field, code) in fields {
            let response = try fixture.send(fixture.body([field: "\u{0}"]))
            expectError(response, code == "E006" ? 403 : 400, code, field: field)
        }
        expectError(try fixture.send(fixture.body(["image_urls": ["https://example.com/\u{0}.jpg"]])), 400, "E001", field: "image_urls")
        // A raw NUL byte inside a JSON string is not JSON at all.
        let raw = Array(#"{"id":"\#(newID())","category_id":"\#(fixture.categoryID)","name":"a"#.utf8) + [0] + Array(#"b","latitude":1,"longitude":2}"#.utf8)
        expectError(try fixture.user.send("POST", "/v1/locations", body: raw, headers: [("Content-Type", "application/json")]), 400, "E001", field: "body")
        #expect(try fixture.user.get("/v1/locations").meta["total_count"] == 0)
    }
}
