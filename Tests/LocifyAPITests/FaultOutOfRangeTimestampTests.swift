import Foundation
import JSON
import Testing
import TestSupport

/// The fuzz finding over HTTP (RELIABILITY.md, "Fuzzing"): a timestamp whose offset moved it
/// before 0000-01-01T00:00:00Z was accepted, stored, and then trapped the server process while
/// the response was written (one request took the whole server down). Every write path now
/// refuses it with E001, and the server keeps serving.
@Suite("Fuzz regressions over HTTP: timestamps outside 0000-9999 after their offset")
struct FaultOutOfRangeTimestampTests {
    static let outside = ["0000-01-01T00:00:00+01:00", "9999-12-31T23:59:60Z"]

    @Test("POST, PUT, DELETE and push refuse them with E001 naming the field; the server keeps serving", arguments: outside)
    func refusedEverywhere(text: String) throws {
        let user = try APIUser.fresh()
        let home = newID()
        try user.createCategory(home)
        let stamp = JSONValue.string(text)
        expectError(try user.post("/v1/categories", categoryBody(id: newID(), ["created_at": stamp])), 400, "E001", field: "created_at")
        expectError(try user.post("/v1/categories", categoryBody(id: newID(), ["updated_at": stamp])), 400, "E001", field: "updated_at")
        expectError(try user.put("/v1/categories/\(home)", categoryBody(id: nil, ["updated_at": stamp])), 400, "E001", field: "updated_at")
        expectError(
            try user.post("/v1/locations", locationBody(id: newID(), categoryID: home, ["created_at": stamp])), 400, "E001",
            field: "created_at")
        expectError(try user.delete("/v1/categories/\(home)?updated_at=\(queryEncoded(text))"), 400, "E001", field: "updated_at")
        expectError(try user.delete("/v1/categories/\(home)", ["updated_at": stamp]), 400, "E001", field: "updated_at")
        let push = try user.post(
            "/v1/sync/push",
            ["changes": [["type": "category", "action": "create", "data": categoryBody(id: newID(), ["created_at": stamp])]]])
        #expect(push.status == 200)
        #expect(push.object["results"]?.arrayValue?.first?.objectValue?["error"]?.objectValue?["code"]?.stringValue == "E001")
        #expect(try user.server.request("GET", "/health").status == 200)
        #expect(try user.get("/v1/categories/\(home)").status == 200)
    }

    @Test("the first writable instant is stored and echoed in the API's output form")
    func firstInstant() throws {
        let user = try APIUser.fresh()
        let id = newID()
        let created = try user.post("/v1/categories", categoryBody(id: id, ["created_at": "0000-01-01T01:00:00+01:00", "updated_at": "0000-01-01T00:00:00.000Z"]))
        #expect(created.status == 201, "\(created.text)")
        #expect(created.object["created_at"]?.stringValue == "0000-01-01T00:00:00.000Z")
        #expect(try user.get("/v1/categories/\(id)").object["updated_at"]?.stringValue == "0000-01-01T00:00:00.000Z")
    }
}
