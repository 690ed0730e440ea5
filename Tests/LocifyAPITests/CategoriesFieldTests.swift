import Foundation
import JSON
import Testing
import TestSupport
import TestSupportServer

/// A write path a body can be sent on: the same field rules hold for each.
enum CategoryWritePath: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case post = "POST /v1/categories"
    case putBody = "PUT /v1/categories"
    case putPath = "PUT /v1/categories/{id}"

    var testDescription: String { rawValue }

    /// Sends `body` for the category `id` (which must exist for the PUT paths).
    func send(_ user: APIUser, id: String, _ body: JSONValue) throws -> TestResponse {
        switch self {
        case .post: return try user.post("/v1/categories", body)
        case .putBody: return try user.put("/v1/categories", body)
        case .putPath: return try user.put("/v1/categories/\(id)", body)
        }
    }
}

@Suite("Categories over HTTP: every row of the field table (openapi.yaml)")
struct CategoriesFieldTests {
    @Test("a create answers 201 with the full record: lower-case id, trimmed name, millisecond UTC times")
    func createAnswersFullRecord() throws {
        let user = try APIUser.fresh()
        let id = UUID().uuidString.uppercased()
        let response = try user.post(
            "/v1/categories",
            categoryBody(id: id, name: "  Food ", ["created_at": .string(clientTime(-5)), "updated_at": .string(clientTime(0))]))
        expectRecord(
            response, 201,
            categoryJSON(id: id.lowercased(), user: user, name: "Food", createdAt: clientTime(-5), updatedAt: clientTime(0)))
        #expect(response.headers["Content-Type"] == "application/json; charset=utf-8")
        let read = try user.get("/v1/categories/\(id.lowercased())")
        expectRecord(read, 200, response.object)
    }

    @Test("id: absent or null is E004, a non-string E001, a malformed UUID E002")
    func idRules() throws {
        let user = try APIUser.fresh()
        expectError(try user.post("/v1/categories", categoryBody(id: nil)), 400, "E004", field: "id")
        expectError(try user.post("/v1/categories", categoryBody(id: nil, ["id": nil])), 400, "E004", field: "id")
        expectError(try user.post("/v1/categories", categoryBody(id: nil, ["id": 12])), 400, "E001", field: "id")
        for malformed in ["", "not-a-uuid", "123e4567-e89b-12d3-a456-42661417400", "123e4567e89b12d3a456426614174000",
            "{123e4567-e89b-12d3-a456-426614174000}", "123e4567-e89b-12d3-a456-42661417400g", "123e4567-e89b-12d3-a456-4266141740\u{0}0"]
        {
            expectError(try user.post("/v1/categories", categoryBody(id: malformed)), 400, "E002", field: "id")
        }
        // PUT with the id in the body needs it too.
        expectError(try user.put("/v1/categories", categoryBody(id: nil)), 400, "E004", field: "id")
        expectError(try user.put("/v1/categories", categoryBody(id: "nope")), 400, "E002", field: "id")
        // A malformed path id.
        expectError(try user.put("/v1/categories/nope", categoryBody(id: nil)), 400, "E002", field: "id")
        let categories = try user.get("/v1/categories")
        #expect(categories.meta["total_count"] == 4, "nothing was created")
    }

    @Test("user_id: the caller's own id is accepted, another user's is E006, a non-string E001", arguments: CategoryWritePath.allCases)
    func userIDRules(path: CategoryWritePath) throws {
        let user = try APIUser.fresh()
        let id = newID()
        if path != .post { try user.createCategory(id, updatedAtMinute: 0) }
        let base = categoryBody(id: id, name: "Mine", ["updated_at": .string(clientTime(1))])
        expectError(try path.send(user, id: id, setting("user_id", "someone-else", in: base)), 403, "E006", field: "user_id")
        expectError(try path.send(user, id: id, setting("user_id", .string(user.uid + "\u{0}"), in: base)), 403, "E006", field: "user_id")
        expectError(try path.send(user, id: id, setting("user_id", 7, in: base)), 400, "E001", field: "user_id")
        let accepted = try path.send(user, id: id, setting("user_id", .string(user.uid), in: base))
        #expect(accepted.status == (path == .post ? 201 : 200), "\(accepted.text)")
        #expect(accepted.object["user_id"]?.stringValue == user.uid)
        #expect(accepted.object["name"] == "Mine")
        let nullUserID = try path.send(user, id: id, setting("user_id", nil, in: setting("updated_at", .string(clientTime(2)), in: base)))
        #expect(nullUserID.status == 200 && nullUserID.object["user_id"]?.stringValue == user.uid, "\(nullUserID.text)")
    }

    @Test("name: absent or null is E004, a non-string E001", arguments: CategoryWritePath.allCases)
    func nameTypeRules(path: CategoryWritePath) throws {
        let user = try APIUser.fresh()
        let id = newID()
        if path != .post { try user.createCategory(id, updatedAtMinute: 0) }
        let base = categoryBody(id: id, name: nil)
        expectError(try path.send(user, id: id, base), 400, "E004", field: "name")
        expectError(try path.send(user, id: id, setting("name", nil, in: base)), 400, "E004", field: "name")
        for wrong: JSONValue in [12, true, ["a"], ["first": "a"]] {
            expectError(try path.send(user, id: id, setting("name", wrong, in: base)), 400, "E001", field: "name")
        }
    }

    @Test("name: trimmed of leading and trailing Unicode whitespace, then 1 to 255 code points", arguments: CategoryWritePath.allCases)
    func nameLengthRules(path: CategoryWritePath) throws {
        let user = try APIUser.fresh()
        let id = newID()
        if path != .post { try user.createCategory(id, updatedAtMinute: 0) }
        var minute = 1
        func write(_ name: String) throws -> TestResponse {
            minute += 1
            return try path.send(user, id: id, categoryBody(id: id, name: name, ["updated_at": .string(clientTime(minute))]))
        }
        for empty in ["", " ", "\t\n\r ", "\u{3000}\u{A0}\u{2003}\u{85}"] {
            expectError(try write(empty), 400, "E001", field: "name")
        }
        let accepted: [(sent: String, stored: String)] = [
            ("\u{3000}\u{A0} Caf\u{E9}\t\n", "Caf\u{E9}"),
            ("a", "a"),
            (String(repeating: "\u{E9}", count: 255), String(repeating: "\u{E9}", count: 255)),
            (String(repeating: "\u{1F600}", count: 255), String(repeating: "\u{1F600}", count: 255)),
            ("  " + String(repeating: "x", count: 255) + " \n", String(repeating: "x", count: 255)),
            ("inner  spaces\u{A0}kept", "inner  spaces\u{A0}kept"),
        ]
        for (index, (sent, stored)) in accepted.enumerated() {
            let response = try write(sent)
            #expect(response.status == (path == .post && index == 0 ? 201 : 200), "\(response.text)")
            #expect(response.object["name"]?.stringValue == stored)
        }
        // Code points, not characters or bytes: 128 "e" + combining acute = 256 code points.
        expectError(try write(String(repeating: "e\u{301}", count: 128)), 400, "E001", field: "name")
        expectError(try write(String(repeating: "x", count: 256)), 400, "E001", field: "name")
        expectError(try write(String(repeating: "\u{1F600}", count: 256)), 400, "E001", field: "name")
        let stored = try user.get("/v1/categories/\(id)")
        #expect(stored.object["name"]?.stringValue == "inner  spaces\u{A0}kept")
    }

    @Test("name: control characters (NUL, other C0, DEL, C1) are E001, never a 500", arguments: CategoryWritePath.allCases)
    func nameControlCharacters(path: CategoryWritePath) throws {
        let user = try APIUser.fresh()
        let id = newID()
        if path != .post { try user.createCategory(id, updatedAtMinute: 0) }
        for control in ["\u{0}", "\u{1}", "\u{7}", "\t", "\n", "\r", "\u{1B}", "\u{1F}", "\u{7F}", "\u{80}", "\u{9F}"] {
            let body = categoryBody(id: id, name: "Bad\(control)Name", ["updated_at": .string(clientTime(5))])
            expectError(try path.send(user, id: id, body), 400, "E001", field: "name")
        }
        let onlyNUL = categoryBody(id: id, name: "\u{0}", ["updated_at": .string(clientTime(5))])
        expectError(try path.send(user, id: id, onlyNUL), 400, "E001", field: "name")
    }

    @Test("icon: an absolute https URL (scheme in any letter case) with a host, at most 2048 characters; null or absent is null")
    func iconAccepted() throws {
        let user = try APIUser.fresh()
        let long = "https://example.com/" + String(repeating: "a", count: 2048 - 20)
        #expect(long.unicodeScalars.count == 2048)
        let accepted = [
            "https://example.com/icon.png", "HTTPS://EXAMPLE.COM/ICON.PNG", "hTTpS://example.com", "https://example.com:8443/x?y=1#z",
            "https://user@example.com/x", "https://[::1]/x", "https://firebasestorage.googleapis.com/v0/b/b/o/categories%2Fu%2Fc%2Fi.png?alt=media",
            "https://ex\u{E4}mple.com/\u{E9}", long,
        ]
        for (index, icon) in accepted.enumerated() {
            let id = newID()
            let response = try user.post("/v1/categories", categoryBody(id: id, name: "Icon \(index)", ["icon": .string(icon)]))
            #expect(response.status == 201, "\(icon): \(response.text)")
            #expect(response.object["icon"]?.stringValue == icon, "stored unchanged")
        }
        let withNull = try user.post("/v1/categories", categoryBody(id: newID(), ["icon": nil]))
        #expect(withNull.status == 201 && withNull.object["icon"] == .null)
        let absent = try user.post("/v1/categories", categoryBody(id: newID()))
        #expect(absent.status == 201 && absent.object["icon"] == .null)
        // A PUT without icon clears it (full replacement).
        let id = newID()
        try user.createCategory(id, ["icon": "https://example.com/i.png", "updated_at": .string(clientTime(0))])
        let replaced = try user.put("/v1/categories/\(id)", categoryBody(id: nil, name: "No icon", ["updated_at": .string(clientTime(1))]))
        #expect(replaced.status == 200 && replaced.object["icon"] == .null, "\(replaced.text)")
    }

    @Test("icon: http, file:, content:, relative, hostless, with whitespace or control characters, over 2048 characters, or not a string is E001", arguments: CategoryWritePath.allCases)
    func iconRefused(path: CategoryWritePath) throws {
        let user = try APIUser.fresh()
        let id = newID()
        if path != .post { try user.createCategory(id, updatedAtMinute: 0) }
        let refused: [JSONValue] = [
            "http://example.com/icon.png", "file:///var/mobile/icon.png", "content://media/external/images/1", "/icons/a.png",
            "icon.png", "https://", "https:///icon.png", "https://example .com/i.png", "https://example.com/a b.png",
            "https://example.com/a\tb", "https://example.com/a\u{0}", "https://example.com/\u{85}", " https://example.com/i.png",
            "https://example.com/i.png\n", "ftp://example.com/i.png", "https:example.com", "https://example.com:99999999/x",
            .string("https://example.com/" + String(repeating: "a", count: 2029)), "", 12, true, ["https://example.com"],
        ]
        for icon in refused {
            let body = categoryBody(id: id, name: "Icon", ["icon": icon, "updated_at": .string(clientTime(3))])
            expectError(try path.send(user, id: id, body), 400, "E001", field: "icon")
        }
    }

    @Test("is_default is read-only: true exactly for the four default ids, whatever the client sends")
    func isDefaultReadOnly() throws {
        let user = try APIUser.fresh()
        for value: JSONValue in [true, false, "yes", 1, nil] {
            let created = try user.post("/v1/categories", categoryBody(id: newID(), ["is_default": value]))
            #expect(created.status == 201 && created.object["is_default"] == false, "\(created.text)")
        }
        let cafe = defaultCategories[1].id
        let edited = try user.put(
            "/v1/categories/\(cafe)", categoryBody(id: nil, name: "Coffee", ["is_default": false, "updated_at": .string(clientTime(0))]))
        #expect(edited.status == 200 && edited.object["is_default"] == true && edited.object["name"] == "Coffee", "\(edited.text)")
        let list = try user.get("/v1/categories?size=100")
        let defaults = list.data.compactMap(\.objectValue).filter { $0["is_default"] == true }
        #expect(Set(defaults.compactMap { $0["id"]?.stringValue }) == Set(defaultCategories.map(\.id)))
        #expect(list.data.count == 9)
    }

    @Test("sync_status: the four client values are accepted and ignored (output is always synced); anything else is E001", arguments: CategoryWritePath.allCases)
    func syncStatusRules(path: CategoryWritePath) throws {
        let user = try APIUser.fresh()
        let id = newID()
        if path != .post { try user.createCategory(id, updatedAtMinute: 0) }
        for (minute, status) in ["synced", "pendingCreate", "pendingUpdate", "pendingDelete"].enumerated() {
            let body = categoryBody(id: id, name: "S\(minute)", ["sync_status": .string(status), "updated_at": .string(clientTime(minute + 1))])
            let response = try path.send(user, id: id, body)
            #expect(response.status == 200 || response.status == 201, "\(status): \(response.text)")
            #expect(response.object["sync_status"] == "synced")
        }
        for bad: JSONValue in ["deleted", "Synced", "PENDINGCREATE", "", "synced\u{0}", 1, true] {
            let body = categoryBody(id: id, name: "Bad", ["sync_status": bad, "updated_at": .string(clientTime(10))])
            expectError(try path.send(user, id: id, body), 400, "E001", field: "sync_status")
        }
    }

    @Test("read-only fields are never taken from the client: version, location_count, is_default, sync_status, created_at on update")
    func readOnlyFieldsIgnored() throws {
        let user = try APIUser.fresh()
        let id = newID()
        let extra: JSONObject = [
            "version": 42, "location_count": 99, "is_default": true, "sync_status": "pendingCreate", "deleted": true,
            "deleted_at": .string(clientTime(0)), "created_at": .string(clientTime(-10)), "updated_at": .string(clientTime(0)),
        ]
        let created = try user.post("/v1/categories", categoryBody(id: id, name: "Ro", extra))
        expectRecord(created, 201, categoryJSON(id: id, user: user, name: "Ro", createdAt: clientTime(-10), updatedAt: clientTime(0)))
        var update = extra
        update["created_at"] = .string(clientTime(-100))
        update["updated_at"] = .string(clientTime(1))
        update["version"] = "not even a number"
        let updated = try user.put("/v1/categories/\(id)", categoryBody(id: id, name: "Ro", update))
        expectRecord(
            updated, 200, categoryJSON(id: id, user: user, name: "Ro", version: 2, createdAt: clientTime(-10), updatedAt: clientTime(1)))
    }

    @Test("unknown fields are ignored (forward compatibility)")
    func unknownFieldsIgnored() throws {
        let user = try APIUser.fresh()
        let id = newID()
        let extra: JSONObject = [
            "color": "#ff0000", "nested": ["a": [1, 2, nil]], "Name": 12, "NAME": nil, "updated_at": .string(clientTime(0)),
        ]
        let response = try user.post("/v1/categories", categoryBody(id: id, name: "Known", extra))
        expectRecord(response, 201, categoryJSON(id: id, user: user, name: "Known", createdAt: clientTime(0), updatedAt: clientTime(0)))
    }

    @Test("created_at and updated_at that are not RFC 3339 timestamps, or not strings, are E001", arguments: ["created_at", "updated_at"])
    func timestampFormat(field: String) throws {
        let user = try APIUser.fresh()
        let bad: [JSONValue] = [
            "yesterday", "2025-03-01", "2025-03-01T12:00:00", "2025-02-30T12:00:00Z", "2025-03-01T24:00:00Z", "2025-13-01T00:00:00Z",
            "2025-03-01T12:00:00.Z", "2025-03-01T12:00:00+0100", "1740830400000", "2025-03-01T12:00:00Z\u{0}", "", 1_740_830_400, true,
        ]
        for value in bad {
            expectError(try user.post("/v1/categories", categoryBody(id: newID(), [field: value])), 400, "E001", field: field)
        }
        let null = try user.post("/v1/categories", categoryBody(id: newID(), [field: nil]))
        #expect(null.status == 201, "null is the same as absent: \(null.text)")
    }
}
