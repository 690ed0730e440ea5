import Foundation
import JSON
import Testing
import TestSupport
import TestSupportServer

@Suite("End to end: the server over real sockets, real PostgreSQL, fake Google")
struct SmokeTests {
    @Test("health, authentication and a first write")
    func firstRequests() throws {
        let server = try TestServer.start()
        defer { server.stop() }
        var response = try server.request("GET", "/health")
        #expect(response.status == 200 && response.object["status"] == "ok")
        #expect(response.headers["X-Request-Id"] != nil)
        response = try server.request("GET", "/v1/categories")
        #expect(response.status == 401 && response.errorCode == "E005")
        #expect(response.headers["WWW-Authenticate"] == "Bearer")
        response = try server.request("GET", "/v1/categories", as: "alice")
        #expect(response.status == 200)
        #expect(response.meta["total_count"] == 4)
        let id = UUID().uuidString
        response = try server.request("POST", "/v1/categories", as: "alice", json: ["id": .string(id), "name": "Food"])
        #expect(response.status == 201)
        #expect(response.object["id"]?.stringValue == id.lowercased())
        response = try server.request("GET", "/v1/categories/\(id)", as: "bob")
        #expect(response.status == 404 && response.errorCode == "E007")
    }
}
