import Foundation
import JSON
import Testing
import TestSupport

/// OWASP API8/API10-style injection and Unicode handling: SQL metacharacters and Unicode edge
/// cases in every string field and query parameter are stored and returned verbatim (names
/// after trimming), or refused with the right error; never a 500, never interpreted.
@Suite("Security: injection and Unicode edge cases")
struct SecurityInjectionTests {
    /// Texts that must round-trip byte for byte through every free-text field.
    static let hostileTexts: [String] = [
        "'; DROP TABLE categories; --",
        "Robert'); DELETE FROM locations WHERE ('1'='1",
        "100% _wild_ %% __",
        #"back\slash \\ \' \" \n (literal)"#,
        "\"double\" 'single' `back`",
        "$1 $$ ${x} %s %n {{x}} <script>alert(1)</script>",
        "\u{202E}reversed\u{202C} \u{200F}RLM \u{200E}LRM",
        "emoji 😀 👨‍👩‍👧‍👦 🏳️‍🌈 flags 🇫🇷",
        "combining e\u{0301} a\u{0308}\u{0323} Z\u{0351}\u{0352}",
        "zero\u{200B}width\u{FEFF}bom",
        "שלום עולם مرحبا",
        String(repeating: "𝕏", count: 255),
    ]

    @Test("category names and icons with SQL metacharacters and Unicode edge cases are stored and returned verbatim", arguments: hostileTexts)
    func categoryText(text: String) throws {
        let user = try APIUser.fresh()
        let id = newID()
        let icon = "https://cdn.example.com/\(queryEncoded(text).prefix(1000))?q=';--&p=%25_"
        let created = try user.post("/v1/categories", categoryBody(id: id, name: text, ["icon": .string(icon)]))
        #expect(created.status == 201, "\(created.text)")
        #expect(created.object["name"]?.stringValue == text)
        #expect(created.object["icon"]?.stringValue == icon)
        let read = try user.get("/v1/categories/\(id)")
        #expect(read.object == created.object)
        let listed = try user.get("/v1/categories?size=100").data.compactMap(\.objectValue)
        #expect(listed.contains(created.object))
        let feed = try user.get("/v1/sync/changes?limit=1000").object["changes"]?.arrayValue ?? []
        #expect(feed.contains { $0.objectValue?["data"]?.objectValue == created.object })
    }

    @Test("location name, address, description and image URLs round-trip verbatim, in REST and in a push", arguments: hostileTexts)
    func locationText(text: String) throws {
        let user = try APIUser.fresh()
        let home = newID()
        try user.createCategory(home)
        let long = String(text.unicodeScalars.prefix(1000).map(Character.init))
        let url = "https://img.example.com/\(queryEncoded(text).prefix(500))/'%_\\"
        let fields: JSONObject = [
            "address": .string(long), "description": .string("\t" + long + "\r\n"), "image_urls": [.string(url)],
        ]
        let viaREST = try user.post("/v1/locations", locationBody(id: newID(), categoryID: home, name: text, fields))
        #expect(viaREST.status == 201, "\(viaREST.text)")
        let viaPush = try user.post(
            "/v1/sync/push",
            ["changes": [["type": "location", "action": "create", "data": locationBody(id: newID(), categoryID: home, name: text, fields)]]])
        let pushed = viaPush.object["results"]?.arrayValue?.first?.objectValue?["data"]?.objectValue
        for record in [viaREST.object, pushed ?? [:]] {
            #expect(record["name"]?.stringValue == text)
            #expect(record["address"]?.stringValue == long)
            #expect(record["description"]?.stringValue == "\t" + long + "\r\n")
            #expect(record["image_urls"] == [.string(url)])
            let id = try #require(record["id"]?.stringValue)
            #expect(try user.get("/v1/locations/\(id)").object == record)
        }
    }

    @Test("the profile name round-trips verbatim", arguments: hostileTexts)
    func profileName(text: String) throws {
        let user = try APIUser.fresh()
        let response = try user.put("/v1/users/me", ["name": .string(text)])
        #expect(response.status == 200, "\(response.text)")
        #expect(response.object["name"]?.stringValue == text)
        #expect(try user.get("/v1/users/me").object["name"]?.stringValue == text)
    }

    @Test("q treats %, _, quotes and backslashes literally and matches hostile texts exactly")
    func searchParameter() throws {
        let user = try APIUser.fresh()
        let home = newID()
        try user.createCategory(home)
        var idsByName: [String: String] = [:]
        for name in ["100% sure", "under_score", "it's", #"back\slash"#, "plain name", "Émile Zola", "😀 smile"] {
            let record = try user.createLocation(in: home, name: name)
            idsByName[name] = record["id"]?.stringValue
        }
        let cases: [(query: String, names: [String])] = [
            ("%", ["100% sure"]), ("_", ["under_score"]), ("'", ["it's"]), (#"\"#, [#"back\slash"#]),
            ("%_", []), ("'; DROP TABLE locations; --", []), ("émile", ["Émile Zola"]), ("😀", ["😀 smile"]),
            (" ", ["100% sure", "plain name", "Émile Zola", "😀 smile"]), ("", Array(idsByName.keys)),
        ]
        for (query, names) in cases {
            let response = try user.get("/v1/locations?size=100&q=\(queryEncoded(query))")
            #expect(response.status == 200, "q=\(query): \(response.text)")
            #expect(Set(ids(response)) == Set(names.compactMap { idsByName[$0] }), "q=\(query)")
        }
        #expect(try user.get("/v1/locations?size=100").meta["total_count"] == 7)
    }

    @Test("hostile query parameter values are refused with E001/E002 naming the parameter, never a 500")
    func queryParameters() throws {
        let user = try APIUser.fresh()
        let hostile = ["'; DROP TABLE users; --", "1 OR 1=1", "%00", "\u{0}", "\\", "😀", "\u{202E}", String(repeating: "9", count: 40)]
        for value in hostile {
            let encoded = queryEncoded(value)
            let checks: [(String, String, String)] = [
                ("/v1/locations?category_id=\(encoded)", "E002", "category_id"),
                ("/v1/locations?sort=\(encoded)", "E001", "sort"),
                ("/v1/locations?is_favorite=\(encoded)", "E001", "is_favorite"),
                ("/v1/locations?page=\(encoded)", "E001", "page"),
                ("/v1/categories?size=\(encoded)", "E001", "size"),
                ("/v1/sync/changes?since=\(encoded)", "E001", "since"),
                ("/v1/sync/changes?limit=\(encoded)", "E001", "limit"),
                ("/v1/categories/\(encoded)", "E002", "id"),
            ]
            for (path, code, field) in checks {
                expectError(try user.get(path), 400, code, field: field)
            }
            let deletion = try user.delete("/v1/categories/\(defaultCategories[0].id)?reassign_category_id=\(encoded)")
            expectError(deletion, 400, "E002", field: "reassign_category_id")
            expectError(try user.delete("/v1/locations/\(newID())?updated_at=\(encoded)"), 400, "E001", field: "updated_at")
        }
        expectError(try user.get("/v1/locations?q=%00"), 400, "E001", field: "q")
        #expect(try user.get("/v1/categories?size=100").meta["total_count"] == 4)
    }

    @Test("NUL and other control characters in names are E001; lone surrogate escapes and invalid UTF-8 are invalid JSON (E001)")
    func refusedText() throws {
        let user = try APIUser.fresh()
        let home = newID()
        try user.createCategory(home)
        for name in ["a\u{0}b", "\u{7}", "tab\there", "del\u{7F}", "c1\u{85}x", "\u{9F}"] {
            expectError(try user.post("/v1/categories", categoryBody(id: newID(), name: name)), 400, "E001", field: "name")
            expectError(try user.put("/v1/users/me", ["name": .string(name)]), 400, "E001", field: "name")
        }
        for text in ["nul\u{0}", "bell\u{7}"] {
            let body = locationBody(id: newID(), categoryID: home, ["address": .string(text)])
            expectError(try user.post("/v1/locations", body), 400, "E001", field: "address")
        }
        let id = newID()
        let headers = [("Content-Type", "application/json")]
        for raw in [
            #"{"id":"\#(id)","name":"\ud800"}"#, #"{"id":"\#(id)","name":"\udc00x"}"#, #"{"id":"\#(id)","name":"\ud83d\u0041"}"#,
        ] {
            expectError(try user.send("POST", "/v1/categories", body: Array(raw.utf8), headers: headers), 400, "E001", field: "body")
        }
        for bytes: [UInt8] in [[0xFF], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80]] {
            let body = Array(#"{"id":"\#(id)","name":""#.utf8) + bytes + Array(#""}"#.utf8)
            expectError(try user.send("POST", "/v1/categories", body: body, headers: headers), 400, "E001", field: "body")
        }
        expectError(try user.get("/v1/categories/\(id)"), 404, "E007")
    }

    @Test("token claims PostgreSQL cannot store (NUL) or that break the name rules never fail provisioning: they are left out, and the user can set a name")
    func hostileTokenClaims() throws {
        let server = try SharedServer.get()
        let cases: [(email: String?, name: String?, expectedEmail: JSONValue, expectedName: JSONValue)] = [
            ("nul\u{0}@example.com", "a\u{0}b", .null, .null),
            ("bell\u{7}@example.com", String(repeating: "n", count: 256), .null, .null),
            ("ok@example.com", "  Ann  ", "ok@example.com", "Ann"),
            ("é@exämple.com", "\u{202E}Zoë 😀", "é@exämple.com", "\u{202E}Zoë 😀"),
        ]
        for (email, name, expectedEmail, expectedName) in cases {
            let uid = "claims-" + newID().prefix(8)
            let token = try server.token(for: uid, email: email, name: name)
            let profile = try server.request("GET", "/v1/users/me", token: token)
            #expect(profile.status == 200, "\(profile.text)")
            #expect(profile.object["email"] == expectedEmail && profile.object["name"] == expectedName, "\(profile.text)")
            #expect(try server.request("GET", "/v1/categories", token: token).meta["total_count"] == 4)
            let renamed = try server.request("PUT", "/v1/users/me", token: token, json: ["name": "Fixed"])
            #expect(renamed.object["name"] == "Fixed")
        }
    }
}
