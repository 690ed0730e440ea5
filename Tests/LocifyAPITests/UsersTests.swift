import Foundation
import JSON
import Postgres
import Testing
import TestSupport
import TestSupportServer

/// openapi.yaml and section 11 "Auth and accounts": the caller's profile, renaming, and
/// account deletion that erases every row of the user (and nothing of anyone else's), refuses
/// older tokens, and lets a fresh sign-in start over with an empty account.
@Suite("Users: /v1/users/me")
struct UsersTests {
    static func uniqueUID(_ label: String) -> String { "\(label)-\(UUID().uuidString.prefix(8).lowercased())" }

    @Test("GET returns exactly id, email, name, created_at and updated_at")
    func profileShape() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let uid = Self.uniqueUID("profile")
        let response = try server.request("GET", "/v1/users/me", token: server.token(for: uid, email: "p@example.com", name: "Pat"))
        #expect(response.status == 200)
        #expect(response.headers["Content-Type"] == "application/json; charset=utf-8")
        #expect(Set(response.object.keys) == ["id", "email", "name", "created_at", "updated_at"])
        #expect(response.object["id"]?.stringValue == uid)
        let created = response.object["created_at"]?.stringValue ?? ""
        #expect(created.count == 24 && created.hasSuffix("Z"), "RFC 3339 UTC with milliseconds: \(created)")
        #expect(response.object["updated_at"] == response.object["created_at"])
    }

    @Test("PUT renames (trimmed), returns the profile, and ignores id and email")
    func rename() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let uid = Self.uniqueUID("rename")
        let token = try server.token(for: uid, email: "r@example.com", name: "Before")
        let before = try server.request("GET", "/v1/users/me", token: token)
        let response = try server.request(
            "PUT", "/v1/users/me", token: token,
            json: ["name": "  Renée Ünïcode  ", "id": "someone-else", "email": "evil@example.com", "unknown": 1])
        #expect(response.status == 200)
        #expect(response.object["name"] == "Renée Ünïcode")
        #expect(response.object["id"]?.stringValue == uid)
        #expect(response.object["email"] == "r@example.com")
        #expect(response.object["created_at"] == before.object["created_at"])
        #expect((response.object["updated_at"]?.stringValue ?? "") >= (before.object["updated_at"]?.stringValue ?? "~"))
        let after = try server.request("GET", "/v1/users/me", token: token)
        #expect(after.object == response.object)
        // No account named "someone-else" appeared.
        let others: Int64 = try server.pool.withConnection { connection in
            try connection.query("SELECT count(*) FROM users WHERE id = 'someone-else'").first?.decode(0) ?? -1
        }
        #expect(others == 0)
    }

    @Test("PUT accepts 1 and 255 characters and refuses empty, blank, 256 characters, control characters (E001), absent or null (E004)")
    func renameValidation() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let token = try server.token(for: Self.uniqueUID("rename-rules"))
        let accepted: [String] = ["x", String(repeating: "ñ", count: 255), " \t padded \n "]
        for name in accepted {
            let response = try server.request("PUT", "/v1/users/me", token: token, json: ["name": .string(name)])
            #expect(response.status == 200, "\(name.prefix(10))")
        }
        let refused: [(String, JSONValue, String)] = [
            ("empty", ["name": ""], "E001"),
            ("blank", ["name": " \u{3000}\t "], "E001"),
            ("256 characters", ["name": .string(String(repeating: "a", count: 256))], "E001"),
            ("NUL", ["name": "a\u{0}b"], "E001"),
            ("DEL", ["name": "a\u{7F}b"], "E001"),
            ("C1 control", ["name": "a\u{85}b"], "E001"),
            ("a number", ["name": 42], "E001"),
            ("absent", ["email": "e@example.com"], "E004"),
            ("null", ["name": nil], "E004"),
            ("an array body", ["name"], "E001"),
        ]
        for (label, body, code) in refused {
            let response = try server.request("PUT", "/v1/users/me", token: token, json: body)
            #expect(response.status == 400, "\(label)")
            #expect(response.errorCode == code, "\(label)")
        }
        var response = try server.request("PUT", "/v1/users/me", token: token, body: Array("{\"name\": ".utf8), headers: [("Content-Type", "application/json")])
        #expect(response.status == 400 && response.errorCode == "E001")
        response = try server.request("PUT", "/v1/users/me", token: token, body: Array("name=x".utf8), headers: [("Content-Type", "application/x-www-form-urlencoded")])
        #expect(response.status == 415 && response.errorCode == "E012")
        // The last accepted name is still in place.
        response = try server.request("GET", "/v1/users/me", token: token)
        #expect(response.object["name"] == "padded")
    }

    @Test("DELETE answers 204 with no body")
    func deleteAnswers204() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let response = try server.request("DELETE", "/v1/users/me", as: Self.uniqueUID("delete-204"))
        #expect(response.status == 204)
        #expect(response.body.isEmpty)
    }

    @Test("deletion erases every row of the user in every table, and no row of another user")
    func deletionErasesEverything() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let victim = Self.uniqueUID("erase-victim")
        let bystander = Self.uniqueUID("erase-bystander")
        // Both users hold the same record ids: ids are scoped per owner.
        let shared = try AccountFixture.populate(server, victim)
        try AccountFixture.populate(server, bystander, ids: shared)
        let bystanderBefore = try AccountFixture.rowCounts(server, bystander)
        #expect(bystanderBefore["categories"] == 7 && bystanderBefore["locations"] == 4)
        let bystanderView = try AccountFixture.apiSnapshot(server, bystander)

        #expect(try server.request("DELETE", "/v1/users/me", as: victim).status == 204)

        let victimAfter = try AccountFixture.rowCounts(server, victim)
        for (table, count) in victimAfter {
            switch table {
            case "account_deletions": #expect(count == 1, "the deletion is remembered (old tokens stay refused)")
            case "cleanup_jobs": break  // the queued Google clean-up outlives the account (CleanupTests)
            default: #expect(count == 0, "\(table) still holds \(count) row(s) of the deleted user")
            }
        }
        #expect(try AccountFixture.rowCounts(server, bystander) == bystanderBefore)
        #expect(try AccountFixture.apiSnapshot(server, bystander) == bystanderView)
    }

    @Test("deletion is one transaction: when its last statement fails, nothing is deleted and no job is queued")
    func deletionIsAtomic() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let uid = Self.uniqueUID("atomic")
        try AccountFixture.populate(server, uid)
        let before = try AccountFixture.rowCounts(server, uid)
        try server.pool.withConnection { connection in
            try connection.execute(unsafeSQL: """
                CREATE FUNCTION test_refuse_deletion() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN RAISE EXCEPTION 'refused by the test'; END; $$;
                CREATE TRIGGER test_refuse_deletion BEFORE INSERT ON account_deletions
                    FOR EACH ROW EXECUTE FUNCTION test_refuse_deletion();
                """)
        }
        let response = try server.request("DELETE", "/v1/users/me", as: uid)
        #expect(response.status == 500 && response.errorCode == "S002")
        #expect(!response.text.contains("refused by the test"), "no internals leak")
        #expect(try AccountFixture.rowCounts(server, uid) == before)
        #expect(try server.request("GET", "/v1/locations", as: uid).meta["total_count"] == 3)
    }

    @Test("after deletion, a token issued before it or in the same second is refused on every endpoint and re-creates nothing")
    func oldTokensAreRefused() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let uid = Self.uniqueUID("revoked")
        let issuedBefore = Date().timeIntervalSince1970 - 30
        let oldToken = try server.token(for: uid, issuedAt: issuedBefore)
        try AccountFixture.populate(server, uid)
        #expect(try server.request("GET", "/v1/users/me", token: oldToken).status == 200)
        #expect(try server.request("DELETE", "/v1/users/me", token: oldToken).status == 204)
        let deletedSecond: Int64 = try server.pool.withConnection { connection in
            try connection.query("SELECT deleted_second FROM account_deletions WHERE user_id = \(uid)").first?.decode(0) ?? 0
        }
        let sameSecondToken = try server.token(for: uid, issuedAt: Double(deletedSecond))

        for (label, token) in [("issued before", oldToken), ("same second", sameSecondToken)] {
            for (method, path, body) in AccountFixture.everyEndpoint() {
                let response = try server.request(method, path, token: token, json: body)
                #expect(response.status == 401, "\(label): \(method) \(path)")
                #expect(response.errorCode == "E005", "\(label): \(method) \(path)")
                #expect(response.headers["WWW-Authenticate"] == #"Bearer error="invalid_token""#, "\(label): \(method) \(path)")
            }
        }
        let counts = try AccountFixture.rowCounts(server, uid)
        #expect(counts["users"] == 0 && counts["categories"] == 0 && counts["locations"] == 0, "nothing re-created: \(counts)")
    }

    @Test("a token issued after the deletion second + clock skew gets a new, empty account with the default categories; old tokens stay refused")
    func freshTokenStartsOver() throws {
        // A 1 s skew: tokens with iat <= deletion second + 1 are refused (issue 13 item 10).
        let server = try TestServer.start(.inProcess, configure: { $0.tokenClockSkewSeconds = 1 })
        defer { server.stop() }
        let uid = Self.uniqueUID("reborn")
        let oldToken = try server.token(for: uid, issuedAt: Date().timeIntervalSince1970 - 30, email: "old@example.com", name: "Old")
        let oldIDs = try AccountFixture.populate(server, uid, token: oldToken)
        let oldProfile = try server.request("GET", "/v1/users/me", token: oldToken)
        #expect(try server.request("DELETE", "/v1/users/me", token: oldToken).status == 204)
        let deletedSecond: Int64 = try server.pool.withConnection { connection in
            try connection.query("SELECT deleted_second FROM account_deletions WHERE user_id = \(uid)").first?.decode(0) ?? 0
        }

        // iat = deletion + 2 s is not "in the future" (beyond the skew) once the clock passed deletion + 1 s.
        while Date().timeIntervalSince1970 < Double(deletedSecond + 1) + 0.05 { Thread.sleep(forTimeInterval: 0.05) }
        let freshToken = try server.token(for: uid, issuedAt: Double(deletedSecond + 2), email: "new@example.com", name: "New")
        let profile = try server.request("GET", "/v1/users/me", token: freshToken)
        #expect(profile.status == 200)
        #expect(profile.object["email"] == "new@example.com" && profile.object["name"] == "New")
        #expect(profile.object["created_at"] != oldProfile.object["created_at"])

        let categories = try server.request("GET", "/v1/categories", token: freshToken)
        #expect(categories.meta["total_count"] == 4)
        #expect(categories.data.allSatisfy { $0.objectValue?["is_default"] == true })
        #expect(categories.data.compactMap { $0.objectValue?["location_count"] }.allSatisfy { $0 == 0 })
        #expect(try server.request("GET", "/v1/locations", token: freshToken).meta["total_count"] == 0)
        let snapshot = try server.request("GET", "/v1/sync/changes", token: freshToken)
        #expect(snapshot.status == 200)
        #expect(snapshot.object["changes"]?.arrayValue?.count == 4)
        // The old records are gone for good: their ids are unknown to the new account.
        for id in oldIDs.categories {
            #expect(try server.request("GET", "/v1/categories/\(id)", token: freshToken).errorCode == "E007")
        }

        // Once the new account exists, the old token is still refused (reads and writes alike).
        #expect(try server.request("GET", "/v1/users/me", token: oldToken).errorCode == "E005")
        #expect(try server.request("PUT", "/v1/users/me", token: oldToken, json: ["name": "Old again"]).errorCode == "E005")
        #expect(try server.request("GET", "/v1/users/me", token: freshToken).object["name"] == "New")

        // The new account can be deleted in turn; the fresh token was issued (by its claim) in the
        // second after the first deletion, so wait until the clock has passed that second.
        while Date().timeIntervalSince1970 < Double(deletedSecond + 2) { Thread.sleep(forTimeInterval: 0.05) }
        #expect(try server.request("DELETE", "/v1/users/me", token: freshToken).status == 204)
        #expect(try server.request("GET", "/v1/users/me", token: freshToken).errorCode == "E005")
    }
}

/// Populates accounts through the API and inspects what the database holds for a user.
enum AccountFixture {
    /// The record ids used by `populate`.
    struct IDs: Sendable {
        var categories: [UUID] = [UUID(), UUID()]
        var locations: [UUID] = [UUID(), UUID(), UUID()]
    }

    /// Gives `uid` two extra categories (one later tombstoned by a cascade), three live
    /// locations, one location tombstone, and a renamed profile. Returns the ids used.
    @discardableResult
    static func populate(_ server: TestServer, _ uid: String, ids: IDs = IDs(), token: String? = nil) throws -> IDs {
        let token = try token ?? server.token(for: uid)
        func send(_ method: String, _ path: String, _ body: JSONValue? = nil) throws {
            let response = try server.request(method, path, token: token, json: body)
            guard (200...299).contains(response.status) else {
                throw AuthTestError("\(method) \(path) answered \(response.status): \(response.text)")
            }
        }
        try send("PUT", "/v1/users/me", ["name": "Populated"])
        for (index, id) in ids.categories.enumerated() {
            try send("POST", "/v1/categories", ["id": .string(id.uuidString), "name": .string("Category \(index)")])
        }
        let doomed = UUID()
        try send("POST", "/v1/categories", ["id": .string(doomed.uuidString), "name": "Doomed"])
        for (index, id) in ids.locations.enumerated() {
            try send("POST", "/v1/locations", [
                "id": .string(id.uuidString), "category_id": .string(ids.categories[index % 2].uuidString),
                "name": .string("Place \(index)"), "latitude": 10, "longitude": 20,
                "image_urls": [.string("https://firebasestorage.googleapis.com/v0/b/\(TestConstants.bucket)/o/locations%2F\(uid)%2F\(id.uuidString.lowercased())%2Fa.jpg?alt=media")],
            ])
        }
        let deleted = UUID()
        try send("POST", "/v1/locations", [
            "id": .string(deleted.uuidString), "category_id": .string(doomed.uuidString), "name": "Gone",
            "latitude": 0, "longitude": 0,
        ])
        try send("DELETE", "/v1/locations/\(deleted.uuidString)")
        try send("DELETE", "/v1/categories/\(doomed.uuidString)")
        // That delete queued Storage clean-up; let the worker finish it, so the user's row counts
        // stay still from here on unless a test changes them.
        guard try eventually({ try rowCounts(server, uid)["cleanup_jobs"] == 0 }) else {
            throw AuthTestError("the clean-up jobs of \(uid) did not finish")
        }
        return ids
    }

    /// Rows per table that belong to `uid`: every table of the schema with a `user_id` column,
    /// plus `users` by `id`. Tables added later are covered without changing this test.
    static func rowCounts(_ server: TestServer, _ uid: String) throws -> [String: Int64] {
        try server.pool.withConnection { connection in
            let tables = try connection.query(
                """
                SELECT table_name FROM information_schema.columns
                WHERE table_schema = 'public' AND column_name = 'user_id'
                ORDER BY table_name
                """)
            var names: [String] = []
            for row in tables { names.append(try row.decode(0)) }
            var counts: [String: Int64] = [:]
            for table in names {
                let quoted = "\"" + table.replacingOccurrences(of: "\"", with: "\"\"") + "\""
                counts[table] = try connection.query("SELECT count(*) FROM \(unsafeSQL: quoted) WHERE user_id = \(uid)").first?.decode(0) ?? -1
            }
            counts["users"] = try connection.query("SELECT count(*) FROM users WHERE id = \(uid)").first?.decode(0) ?? -1
            return counts
        }
    }

    /// What the API shows `uid`: its profile, categories and locations (pages of 100), the full
    /// sync snapshot.
    static func apiSnapshot(_ server: TestServer, _ uid: String) throws -> [JSONValue] {
        let token = try server.token(for: uid, issuedAt: Date().timeIntervalSince1970)
        return try ["/v1/users/me", "/v1/categories?size=100", "/v1/locations?size=100", "/v1/sync/changes"].map { path in
            try server.request("GET", path, token: token).json ?? .null
        }.map { value in
            // The sync cursor is opaque and may encode the time it was issued; server_time is the clock's.
            guard case .object(var object) = value else { return value }
            object["cursor"] = nil
            object["server_time"] = nil
            return .object(object)
        }
    }

    /// Every `/v1` endpoint with a body that would write (and so provision) where it can.
    static func everyEndpoint() -> [(String, String, JSONValue?)] {
        let category = UUID().uuidString
        let location = UUID().uuidString
        return [
            ("GET", "/v1/users/me", nil),
            ("PUT", "/v1/users/me", ["name": "Revived"]),
            ("DELETE", "/v1/users/me", nil),
            ("GET", "/v1/info", nil),
            ("GET", "/v1/categories", nil),
            ("POST", "/v1/categories", ["id": .string(category), "name": "Revived"]),
            ("PUT", "/v1/categories", ["id": .string(category), "name": "Revived"]),
            ("GET", "/v1/categories/\(category)", nil),
            ("PUT", "/v1/categories/\(category)", ["id": .string(category), "name": "Revived"]),
            ("DELETE", "/v1/categories/\(category)", nil),
            ("GET", "/v1/locations", nil),
            ("POST", "/v1/locations", [
                "id": .string(location), "category_id": .string(category), "name": "x", "latitude": 0, "longitude": 0,
            ]),
            ("PUT", "/v1/locations", [
                "id": .string(location), "category_id": .string(category), "name": "x", "latitude": 0, "longitude": 0,
            ]),
            ("GET", "/v1/locations/\(location)", nil),
            ("DELETE", "/v1/locations/\(location)", nil),
            ("GET", "/v1/sync/changes", nil),
            ("POST", "/v1/sync/push", ["changes": [["type": "category", "action": "create", "data": ["id": .string(category), "name": "Revived"]]]]),
            ("POST", "/v1/sync/push", ["changes": []]),
            ("POST", "/v1/sync/push", ["changes": [["type": "bogus", "action": "create", "data": [:]]]]),
        ]
    }
}
