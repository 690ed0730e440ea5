import Foundation
import JSON
import Testing
import TestSupport
import TestSupportServer

/// Inputs the contract test (schemathesis against openapi.yaml) found mishandled, kept as
/// regression tests: each is valid (or invalid) by the document and must be answered so.
@Suite("openapi.yaml conformance: edge inputs found by the contract test")
struct OpenAPIConformanceTests {
    /// The default category "Cafe" every new user has (openapi.yaml).
    private static let cafe = "a1050188-e456-5998-8293-a282220c9930"

    @Test("a timestamp whose UTC instant falls before year 0000 is 400 E001, and the server lives on")
    func timestampBeforeYearZero() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let token = try server.token(for: "conformance-time")
        for field in ["created_at", "updated_at"] {
            var body: JSONObject = ["id": .string(UUID().uuidString), "name": "Old"]
            body[field] = "0000-01-01T00:00:00+01:00"
            let response = try server.request("POST", "/v1/categories", token: token, json: .object(body))
            #expect(response.status == 400, "\(field)")
            #expect(response.errorCode == "E001", "\(field)")
            #expect(response.errorField == field)
        }
        // An offset that carries 9999-12-31 into year 10000 cannot be written back either.
        let late = try server.request(
            "DELETE", "/v1/categories/\(Self.cafe)?updated_at=9999-12-31T23:30:00-01:00", token: token)
        #expect(late.status == 400 && late.errorCode == "E001")
        #expect(try server.request("GET", "/v1/categories", token: token).status == 200)
    }

    @Test("the earliest representable instant is accepted and written back as RFC 3339")
    func yearZero() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let token = try server.token(for: "conformance-year-zero")
        let id = UUID().uuidString.lowercased()
        let created = try server.request(
            "POST", "/v1/categories", token: token,
            json: ["id": .string(id), "name": "Ancient", "created_at": "0000-01-01T00:00:00Z", "updated_at": "0000-01-01T00:00:00.000Z"])
        #expect(created.status == 201)
        #expect(created.object["created_at"] == "0000-01-01T00:00:00.000Z")
        #expect(created.object["updated_at"] == "0000-01-01T00:00:00.000Z")
        let listed = try server.request("GET", "/v1/categories", token: token)
        #expect(listed.status == 200)
        #expect(listed.data.contains { $0.objectValue?["id"]?.stringValue == id })
    }

    @Test("member names are compared by code points: U+2001 and U+2003 are two names, not a duplicate")
    func canonicallyEquivalentMemberNames() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let id = UUID().uuidString
        let body = #"{"\u2001": null, "\u2003": null, "id": "\#(id)", "name": "Whitespace keys"}"#
        let response = try server.request(
            "POST", "/v1/categories", token: server.token(for: "conformance-keys"), body: Array(body.utf8),
            headers: [("Content-Type", "application/json")])
        #expect(response.status == 201)
        // A true duplicate is still refused.
        let duplicate = #"{"id": "\#(UUID().uuidString)", "name": "a", "name": "b"}"#
        let refused = try server.request(
            "POST", "/v1/categories", token: server.token(for: "conformance-keys"), body: Array(duplicate.utf8),
            headers: [("Content-Type", "application/json")])
        #expect(refused.status == 400 && refused.errorCode == "E001")
    }

    @Test("image_urls are distinct by code points: canonically equivalent spellings are two URLs")
    func canonicallyEquivalentURLs() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let urls: [JSONValue] = ["https://example.com/\u{212B}", "https://example.com/\u{00C5}"]
        let response = try server.request(
            "POST", "/v1/locations", as: "conformance-urls",
            json: [
                "id": .string(UUID().uuidString), "category_id": .string(Self.cafe), "name": "Two URLs", "latitude": 1,
                "longitude": 2, "image_urls": .array(urls),
            ])
        #expect(response.status == 201)
        #expect(response.object["image_urls"]?.arrayValue == urls)
        let duplicate = try server.request(
            "POST", "/v1/locations", as: "conformance-urls",
            json: [
                "id": .string(UUID().uuidString), "category_id": .string(Self.cafe), "name": "Same URL twice",
                "latitude": 1, "longitude": 2, "image_urls": [urls[0], urls[0]],
            ])
        #expect(duplicate.status == 400 && duplicate.errorCode == "E001")
    }
}
