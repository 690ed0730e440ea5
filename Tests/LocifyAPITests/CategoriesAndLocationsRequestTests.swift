import Foundation
import JSON
import Testing
import TestSupport

/// A body-carrying write of either resource, for the media-type and body-shape rules.
enum BodyWrite: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case postCategory = "POST /v1/categories"
    case putCategory = "PUT /v1/categories"
    case putCategoryPath = "PUT /v1/categories/{id}"
    case postLocation = "POST /v1/locations"
    case putLocation = "PUT /v1/locations"
    case putLocationPath = "PUT /v1/locations/{id}"

    var testDescription: String { rawValue }

    var method: String { rawValue.hasPrefix("POST") ? "POST" : "PUT" }
    var resource: Resource { rawValue.contains("categories") ? .categories : .locations }

    /// The request target for a record `id` that exists.
    func target(id: String) -> String {
        rawValue.hasSuffix("{id}") ? "\(resource.path)/\(id)" : resource.path
    }
}

@Suite("Request bodies and representation over HTTP (openapi.yaml)")
struct CategoriesAndLocationsRequestTests {
    /// A fixture with one existing record of the write's resource and a valid newer body for it.
    private func prepared(_ write: BodyWrite) throws -> (fixture: ResourceFixture, id: String, body: [UInt8]) {
        let fixture = try ResourceFixture(write.resource)
        let id = newID()
        try fixture.create(id, minute: 0)
        return (fixture, id, JSONWriter.encode(fixture.body(id: id, name: "Changed", updatedAt: clientTime(1))))
    }

    @Test("a body that is not declared as JSON is 415 E012, and nothing is written", arguments: BodyWrite.allCases)
    func unsupportedMediaType(write: BodyWrite) throws {
        let (fixture, id, body) = try prepared(write)
        let target = write.target(id: id)
        let refused = [
            "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/xml", "text/json",
            "application/jsonp", "application/json-patch+json", "application/problem+json", "json", "*/*",
        ]
        for contentType in refused {
            expectError(try fixture.user.send(write.method, target, body: body, headers: [("Content-Type", contentType)]), 415, "E012")
        }
        expectError(try fixture.user.send(write.method, target, body: body), 415, "E012")
        #expect(try fixture.get(id: id).object["name"] == "Name", "nothing was written")
    }

    @Test("application/json is accepted in any letter case, with a charset or other parameters", arguments: BodyWrite.allCases)
    func jsonMediaTypeForms(write: BodyWrite) throws {
        let (fixture, id, _) = try prepared(write)
        let accepted = ["application/json", "Application/JSON", "application/json; charset=utf-8", "application/json;charset=UTF-8", "APPLICATION/JSON ; charset=\"utf-8\""]
        for (minute, contentType) in accepted.enumerated() {
            let body = JSONWriter.encode(fixture.body(id: id, name: "V\(minute)", updatedAt: clientTime(minute + 1)))
            let response = try fixture.user.send(write.method, write.target(id: id), body: body, headers: [("Content-Type", contentType)])
            #expect(response.status == 200 && response.object["name"]?.stringValue == "V\(minute)", "\(contentType): \(response.text)")
        }
    }

    @Test("malformed JSON is 400 E001 on body, and nothing is written", arguments: BodyWrite.allCases)
    func malformedJSON(write: BodyWrite) throws {
        let (fixture, id, body) = try prepared(write)
        let broken: [[UInt8]] = [
            Array(body.dropLast()), Array("{".utf8), Array("{\"id\": }".utf8), Array("{'id': 'x'}".utf8), Array("{\"name\": \"a\",}".utf8),
            Array("{\"name\": \"a\"} {}".utf8), Array("{\"name\": \"\\x\"}".utf8), Array("{\"name\": \"\\uD800\"}".utf8),
            [0xFF, 0xFE] + Array("{}".utf8), Array("{\"name\": \"\u{1}\"}".utf8), Array("{\"n\": NaN}".utf8), Array("{\"n\": 1e999}".utf8),
            Array("nul".utf8), [0x7B, 0x22, 0xC3, 0x28, 0x22, 0x3A, 0x31, 0x7D],
        ]
        for bytes in broken {
            let response = try fixture.user.send(write.method, write.target(id: id), body: bytes, headers: [("Content-Type", "application/json")])
            expectError(response, 400, "E001", field: "body")
        }
        #expect(try fixture.get(id: id).object["version"] == 1)
    }

    @Test("an empty body or a JSON body that is not an object (array, string, number, boolean, null) is 400 E001", arguments: BodyWrite.allCases)
    func nonObjectBodies(write: BodyWrite) throws {
        let (fixture, id, body) = try prepared(write)
        let target = write.target(id: id)
        expectError(try fixture.user.send(write.method, target, body: [], headers: [("Content-Type", "application/json")]), 400, "E001", field: "body")
        expectError(try fixture.user.send(write.method, target), 400, "E001", field: "body")
        for text in ["[]", "[\(String(decoding: body, as: UTF8.self))]", "\"text\"", "42", "true", "null", " \n "] {
            let response = try fixture.user.send(write.method, target, body: Array(text.utf8), headers: [("Content-Type", "application/json")])
            expectError(response, 400, "E001", field: "body")
        }
        // An empty object is an object: what it lacks is the required fields.
        expectError(try fixture.user.send(write.method, target, json: [:]), 400, "E004")
        #expect(try fixture.get(id: id).object["version"] == 1)
    }

    @Test("upper-case ids are accepted everywhere and every response carries the canonical lower-case form")
    func canonicalLowerCaseIDs() throws {
        let user = try APIUser.fresh()
        let category = newID().uppercased()
        let target = newID().uppercased()
        let location = newID().uppercased()
        let c = category.lowercased(), t = target.lowercased(), l = location.lowercased()
        #expect(try user.post("/v1/categories", categoryBody(id: category, ["updated_at": .string(clientTime(0))])).object["id"]?.stringValue == c)
        #expect(try user.post("/v1/categories", categoryBody(id: target, name: "T")).object["id"]?.stringValue == t)
        let created = try user.post("/v1/locations", locationBody(id: location, categoryID: category, ["updated_at": .string(clientTime(0))]))
        #expect(created.object["id"]?.stringValue == l && created.object["category_id"]?.stringValue == c)
        #expect(try user.get("/v1/locations/\(location)").object["id"]?.stringValue == l)
        #expect(try user.get("/v1/categories/\(category)").object["id"]?.stringValue == c)
        let listed = try user.get("/v1/locations?category_id=\(category)")
        #expect(ids(listed) == [l] && listed.data.first?.objectValue?["category_id"]?.stringValue == c)
        let conflict = try user.post("/v1/locations", locationBody(id: location, categoryID: category, ["updated_at": .string(clientTime(-1))]))
        #expect(conflict.status == 409 && conflict.object["data"]?.objectValue?["id"]?.stringValue == l)
        #expect(conflict.object["data"]?.objectValue?["category_id"]?.stringValue == c)
        expectNoContent(try user.delete("/v1/categories/\(category)?reassign_category_id=\(target)&updated_at=\(clientTime(5))"))
        #expect(try user.get("/v1/locations/\(l)").object["category_id"]?.stringValue == t)
        let tombstone = try user.put("/v1/categories/\(category)", categoryBody(id: category, ["updated_at": .string(clientTime(1))]))
        expectConflict(tombstone, data: tombstoneJSON(id: c, deletedAt: clientTime(5)))
        let all = try user.get("/v1/categories?size=100").text + (try user.get("/v1/locations?size=100").text)
        #expect(!all.contains(category) && !all.contains(target) && !all.contains(location))
    }

    @Test("every /v1 resource route needs a token: 401 E005 without one, before any validation")
    func tokenRequired() throws {
        let server = try SharedServer.get()
        let id = newID()
        let requests: [(String, String)] = [
            ("GET", "/v1/categories"), ("POST", "/v1/categories"), ("PUT", "/v1/categories"), ("GET", "/v1/categories/\(id)"),
            ("PUT", "/v1/categories/\(id)"), ("DELETE", "/v1/categories/\(id)"), ("GET", "/v1/locations"), ("POST", "/v1/locations"),
            ("PUT", "/v1/locations"), ("GET", "/v1/locations/\(id)"), ("PUT", "/v1/locations/not-a-uuid"), ("DELETE", "/v1/locations/\(id)"),
        ]
        for (method, target) in requests {
            let response = try server.request(method, target, body: Array("not json".utf8), headers: [("Content-Type", "text/plain")])
            expectError(response, 401, "E005")
        }
    }

    @Test("a wrong method is 405 E011 with Allow; an unknown path below the resources is 404 E007")
    func routing() throws {
        let user = try APIUser.fresh()
        let id = newID()
        let post = try user.send("POST", "/v1/categories/\(id)", json: [:])
        expectError(post, 405, "E011")
        #expect(post.headers["Allow"].map { Set($0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }) } == ["GET", "HEAD", "PUT", "PATCH", "DELETE"], "HEAD comes with GET")
        let deleteCollection = try user.send("DELETE", "/v1/locations")
        expectError(deleteCollection, 405, "E011")
        #expect(deleteCollection.headers["Allow"].map { Set($0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }) } == ["GET", "HEAD", "POST", "PUT"])
        expectError(try user.get("/v1/locations/\(id)/images"), 404, "E007")
        expectError(try user.get("/v1/location"), 404, "E007")
    }
}
