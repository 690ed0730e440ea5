import Foundation
import JSON
import Postgres
import Testing
import TestSupport
import TestSupportServer

/// The account gate of `POST /v1/sync/push` (openapi.yaml): one gate query per push,
/// run before the batch is looked at.
@Suite("Sync push: the account gate runs once per push, before the batch is read")
struct SyncPushGateTests {
    @Test("an empty push reads the users table exactly once (one gate query), and answers 200 with no results")
    func oneGateQueryPerPush() throws {
        let server = try TestServer.start(.inProcess, dependencies: TestServer.countingTableReads)
        defer { server.stop() }
        let token = try server.token(for: "gate-" + UUID().uuidString.lowercased().prefix(12))
        // The first push provisions the account; the pushes measured after it only pass the gate.
        var response = try server.request("POST", "/v1/sync/push", token: token, json: ["changes": []])
        #expect(response.status == 200 && response.object["results"] == .array([]))
        let before = try server.tableReads("users")
        let pushes = 5
        for _ in 0..<pushes {
            response = try server.request("POST", "/v1/sync/push", token: token, json: ["changes": []])
            #expect(response.status == 200 && response.object["results"] == .array([]))
        }
        let after = try server.tableReads("users")
        #expect(after - before == Int64(pushes), "reads of users per empty push: \(Double(after - before) / Double(pushes))")
    }

    @Test("a revoked token is refused with 401 E005 before a malformed push body is reported")
    func revokedBeforeMalformedBody() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let token = try server.token(for: "gate-" + UUID().uuidString.lowercased().prefix(12))
        #expect(try server.request("POST", "/v1/sync/push", token: token, json: ["changes": []]).status == 200)
        #expect(try server.request("DELETE", "/v1/users/me", token: token).status == 204)
        for body: JSONValue in [["other": 1], ["changes": "not an array"], [["changes": []]]] {
            let response = try server.request("POST", "/v1/sync/push", token: token, json: body)
            #expect(response.status == 401 && response.errorCode == "E005", "\(response.text)")
        }
    }
}
