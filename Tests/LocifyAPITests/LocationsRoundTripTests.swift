import Foundation
import JSON
import Postgres
import Testing
import TestSupport
import TestSupportServer

/// Round trips of a request to the database (issue 16 item 5): the account gate runs once per
/// request, and a location write leaves the live-category rule to the schema's trigger.
/// Each test starts its own server: the counts are table-wide statistics.
@Suite("Locations round trips: one account gate per request, the category rule in the trigger")
struct LocationsRoundTripTests {
    @Test("GET of an unknown location id is 404 E007 \"location not found\" and reads the users table exactly once")
    func unknownLocationReadsUsersOnce() throws {
        let server = try TestServer.start(.inProcess, dependencies: TestServer.countingTableReads)
        defer { server.stop() }
        let token = try server.token(for: "trips-" + UUID().uuidString.lowercased().prefix(12))
        #expect(try server.request("GET", "/v1/users/me", token: token).status == 200)
        let before = try server.tableReads("users")
        let response = try server.request("GET", "/v1/locations/\(newID())", token: token)
        let after = try server.tableReads("users")
        expectError(response, 404, "E007")
        #expect(response.object["error"]?.objectValue?["message"] == "location not found", "\(response.text)")
        #expect(after - before == 1, "reads of users for one request that failed after the gate: \(after - before)")
    }

    @Test("a revoked token is 401 E005 before a request the service refuses as invalid (bad name, cursor or reassignment)")
    func revokedBeforeServiceValidation() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let token = try server.token(for: "trips-" + UUID().uuidString.lowercased().prefix(12))
        let categoryID = newID()
        let created = try server.request("POST", "/v1/categories", token: token, json: categoryBody(id: categoryID))
        #expect(created.status == 201, "\(created.text)")
        // The same requests with a valid token are 400 E001 (checked by the service, not the decoder).
        for (method, path, body) in Self.invalidForTheService(categoryID) {
            let response = try server.request(method, path, token: token, json: body)
            #expect(response.status == 400 && response.errorCode == "E001", "\(method) \(path): \(response.text)")
        }
        #expect(try server.request("DELETE", "/v1/users/me", token: token).status == 204)
        for (method, path, body) in Self.invalidForTheService(categoryID) {
            let response = try server.request(method, path, token: token, json: body)
            #expect(response.status == 401 && response.errorCode == "E005", "\(method) \(path): \(response.text)")
            #expect(response.headers["WWW-Authenticate"] == #"Bearer error="invalid_token""#, "\(method) \(path)")
        }
    }

    @Test("replacing a live location in its live category reads no category row (the trigger checks the rule); an unknown category stays 404 E007")
    func replaceReadsNoCategory() throws {
        let server = try TestServer.start(.inProcess, dependencies: TestServer.countingTableReads)
        defer { server.stop() }
        let token = try server.token(for: "trips-" + UUID().uuidString.lowercased().prefix(12))
        let categoryID = newID()
        let locationID = newID()
        #expect(try server.request("POST", "/v1/categories", token: token, json: categoryBody(id: categoryID)).status == 201)
        let created = try server.request(
            "POST", "/v1/locations", token: token, json: locationBody(id: locationID, categoryID: categoryID))
        #expect(created.status == 201, "\(created.text)")
        let before = try server.tableReads("categories")
        let replaced = try server.request(
            "PUT", "/v1/locations/\(locationID)", token: token,
            json: locationBody(id: locationID, categoryID: categoryID, name: "Renamed"))
        let after = try server.tableReads("categories")
        #expect(replaced.status == 200 && replaced.object["name"] == "Renamed", "\(replaced.text)")
        #expect(after - before == 0, "reads of categories for a replace in the same category: \(after - before)")

        let unknown = try server.request(
            "PUT", "/v1/locations/\(locationID)", token: token, json: locationBody(id: locationID, categoryID: newID()))
        expectError(unknown, 404, "E007")
        #expect(unknown.object["error"]?.objectValue?["message"] == "category not found", "\(unknown.text)")
    }

    /// Requests that decode but that the service refuses with 400 E001.
    static func invalidForTheService(_ categoryID: String) -> [(String, String, JSONValue?)] {
        [
            ("PUT", "/v1/users/me", ["name": "   "]),
            ("GET", "/v1/sync/changes?since=not-a-cursor", nil),
            ("DELETE", "/v1/categories/\(categoryID)?reassign_category_id=\(categoryID)", nil),
        ]
    }
}
