import Foundation
import JSON
import Locify
import LocifyRules
import Primitives
import Testing

@testable import LocifyAPI

@Suite("Request bodies decode into validated drafts (openapi.yaml)")
struct DraftDecodingTests {
    let categoryID = "1F3599BE-6E0E-5CF8-AA59-B97DFDC46AEC"

    func json(_ text: String) throws -> JSONValue { try JSONParser.parse(text) }

    func location(_ extra: String = "") throws -> JSONValue {
        try json(
            #"{"id":"6c2f54c9-801e-5a83-bd62-9cb6d70037af","category_id":"\#(categoryID)","name":" Place ","latitude":1.5,"longitude":-2.5\#(extra)}"#)
    }

    @Test("a minimal category is normalised: trimmed name, lower-case id")
    func minimalCategory() throws {
        let draft = try CategoryDraft(json: json(#"{"id":"\#(categoryID)","name":"  Food  "}"#), userID: "u")
        #expect(draft.name == "Food")
        #expect(draft.id.lowercasedString == categoryID.lowercased())
        #expect(draft.icon == nil && draft.updatedAt == nil && draft.createdAt == nil)
    }

    @Test("non-object bodies are E001")
    func nonObject() throws {
        for body in ["[]", "\"x\"", "1", "null", "true"] {
            #expect(throws: RequestDecodingError.invalid("body", "must be a JSON object")) {
                try CategoryDraft(json: try json(body), userID: "u")
            }
        }
    }

    @Test("absent or null required fields are E004; wrong types E001; bad UUIDs E002")
    func fieldKinds() throws {
        #expect(throws: RequestDecodingError.missingField("id")) { try CategoryDraft(json: try json(#"{"name":"a"}"#), userID: "u") }
        #expect(throws: RequestDecodingError.missingField("name")) {
            try CategoryDraft(json: try json(#"{"id":"\#(categoryID)","name":null}"#), userID: "u")
        }
        #expect(throws: RequestDecodingError.invalid("name", "must be a string")) {
            try CategoryDraft(json: try json(#"{"id":"\#(categoryID)","name":5}"#), userID: "u")
        }
        #expect(throws: RequestDecodingError.invalidUUID(FieldIssue(field: "id", message: "must be a UUID"))) {
            try CategoryDraft(json: try json(#"{"id":"nope","name":"a"}"#), userID: "u")
        }
        #expect(throws: RequestDecodingError.invalid("id", "must be a string")) {
            try CategoryDraft(json: try json(#"{"id":12,"name":"a"}"#), userID: "u")
        }
    }

    @Test("a foreign user_id is E006; the caller's own is accepted")
    func userID() throws {
        #expect(throws: RequestDecodingError.forbidden(FieldIssue(field: "user_id", message: "must be the authenticated user's id"))) {
            try CategoryDraft(json: try json(#"{"id":"\#(categoryID)","name":"a","user_id":"other"}"#), userID: "u")
        }
        _ = try CategoryDraft(json: json(#"{"id":"\#(categoryID)","name":"a","user_id":"u"}"#), userID: "u")
    }

    @Test("sync_status must be one of the four values; read-only fields are ignored")
    func readOnlyFields() throws {
        #expect(throws: RequestDecodingError.self) {
            try CategoryDraft(json: try json(#"{"id":"\#(categoryID)","name":"a","sync_status":"dirty"}"#), userID: "u")
        }
        let draft = try CategoryDraft(
            json: json(
                #"{"id":"\#(categoryID)","name":"a","sync_status":"pendingCreate","version":99,"location_count":7,"is_default":false}"#),
            userID: "u")
        #expect(draft.name == "a")
    }

    @Test("a path id wins; a differing body id is E001")
    func pathID() throws {
        let path = try #require(UUID(apiString: categoryID))
        let draft = try CategoryDraft(json: json(#"{"name":"a"}"#), userID: "u", pathID: path)
        #expect(draft.id == path)
        #expect(throws: RequestDecodingError.invalid("id", "must match the id in the path")) {
            try CategoryDraft(
                json: try json(#"{"id":"6c2f54c9-801e-5a83-bd62-9cb6d70037af","name":"a"}"#), userID: "u", pathID: path)
        }
    }

    @Test("a location decodes with defaults for omitted optional fields")
    func minimalLocation() throws {
        let draft = try LocationDraft(json: location(), userID: "u")
        #expect(draft.name == "Place")
        #expect(draft.address == nil && draft.description == nil && !draft.isFavorite && draft.imageURLs.isEmpty)
        #expect(draft.latitude == 1.5 && draft.longitude == -2.5)
    }

    @Test("coordinates outside their range are E003; on the boundary they are accepted")
    func coordinates() throws {
        #expect(throws: RequestDecodingError.refused(.invalidCoordinates(FieldIssue(field: "latitude", message: "must be between -90 and 90")))) {
            try LocationDraft(json: try json(#"{"id":"\#(categoryID)","category_id":"\#(categoryID)","name":"a","latitude":90.0001,"longitude":0}"#), userID: "u")
        }
        #expect(throws: RequestDecodingError.self) {
            try LocationDraft(json: try json(#"{"id":"\#(categoryID)","category_id":"\#(categoryID)","name":"a","latitude":0,"longitude":-180.5}"#), userID: "u")
        }
        _ = try LocationDraft(json: json(#"{"id":"\#(categoryID)","category_id":"\#(categoryID)","name":"a","latitude":-90,"longitude":180}"#), userID: "u")
        #expect(throws: RequestDecodingError.invalid("latitude", "must be a number")) {
            try LocationDraft(json: try json(#"{"id":"\#(categoryID)","category_id":"\#(categoryID)","name":"a","latitude":"1","longitude":0}"#), userID: "u")
        }
    }

    @Test("image_urls: at most 10 https URLs, no duplicates")
    func imageURLs() throws {
        let ten = (0..<10).map { "\"https://x.example/\($0).jpg\"" }.joined(separator: ",")
        #expect(try LocationDraft(json: location(",\"image_urls\":[\(ten)]"), userID: "u").imageURLs.count == 10)
        #expect(throws: RequestDecodingError.self) { try LocationDraft(json: try location(",\"image_urls\":[\(ten),\"https://x.example/a\"]"), userID: "u") }
        #expect(throws: RequestDecodingError.refused(.invalid("image_urls", "must not contain duplicates"))) {
            try LocationDraft(json: try location(#","image_urls":["https://x.example/a","https://x.example/a"]"#), userID: "u")
        }
        #expect(throws: RequestDecodingError.refused(.invalid("image_urls", "must be an absolute https URL"))) {
            try LocationDraft(json: try location(#","image_urls":["file:///tmp/a.jpg"]"#), userID: "u")
        }
        #expect(throws: RequestDecodingError.invalid("image_urls", "must be an array of strings")) {
            try LocationDraft(json: try location(#","image_urls":"https://x.example/a""#), userID: "u")
        }
    }

    @Test("blank address and description become null; NUL in a name is E001")
    func textFields() throws {
        let draft = try LocationDraft(json: location(#","address":"   ","description":"a\nb""#), userID: "u")
        #expect(draft.address == nil && draft.description == "a\nb")
        #expect(throws: RequestDecodingError.refused(.invalid("name", "must not contain control characters"))) {
            try LocationDraft(json: try json(#"{"id":"\#(categoryID)","category_id":"\#(categoryID)","name":"a\u0000b","latitude":0,"longitude":0}"#), userID: "u")
        }
    }

    @Test("timestamps must be RFC 3339")
    func timestamps() throws {
        #expect(throws: RequestDecodingError.invalid("updated_at", "must be an RFC 3339 timestamp")) {
            try LocationDraft(json: try location(#","updated_at":"yesterday""#), userID: "u")
        }
        let draft = try LocationDraft(json: location(#","updated_at":"2025-01-01T10:00:00.5+01:00""#), userID: "u")
        #expect(draft.updatedAt == Timestamp(rfc3339: "2025-01-01T09:00:00.500Z"))
    }

    @Test("the first problem in field order is the one reported, rule or type alike")
    func firstProblemWins() throws {
        // A name that breaks its rule comes before a malformed sync_status.
        #expect(throws: RequestDecodingError.refused(.invalid("name", "must not be empty"))) {
            try CategoryDraft(json: try json(#"{"id":"\#(categoryID)","name":"  ","sync_status":"dirty"}"#), userID: "u")
        }
        // An icon of the wrong type comes before a bad created_at.
        #expect(throws: RequestDecodingError.invalid("icon", "must be a string")) {
            try CategoryDraft(json: try json(#"{"id":"\#(categoryID)","name":"a","icon":1,"created_at":"x"}"#), userID: "u")
        }
        // Coordinates out of range (E003) come before a malformed is_favorite (E001).
        #expect(throws: RequestDecodingError.refused(.invalidCoordinates(FieldIssue(field: "latitude", message: "must be between -90 and 90")))) {
            try LocationDraft(
                json: try json(#"{"id":"\#(categoryID)","category_id":"\#(categoryID)","name":"a","latitude":91,"longitude":0,"is_favorite":"yes"}"#),
                userID: "u")
        }
        // A long address comes before a missing latitude.
        #expect(throws: RequestDecodingError.refused(.invalid("address", "must be at most 1000 characters"))) {
            try LocationDraft(
                json: try json(#"{"id":"\#(categoryID)","category_id":"\#(categoryID)","name":"a","address":"\#(String(repeating: "x", count: 1001))"}"#),
                userID: "u")
        }
        // A foreign user_id comes before a name of the wrong type.
        #expect(throws: RequestDecodingError.forbidden(FieldIssue(field: "user_id", message: "must be the authenticated user's id"))) {
            try CategoryDraft(json: try json(#"{"id":"\#(categoryID)","user_id":"other","name":5}"#), userID: "u")
        }
    }

    @Test("delete options come from the body, else the query; malformed values are E001 and E002")
    func deleteOptions() throws {
        let target = try #require(UUID(apiString: categoryID))
        let fromQuery = try DeleteOptions(
            body: nil, query: [(name: "updated_at", value: "2025-01-01T00:00:00Z"), (name: "reassign_category_id", value: categoryID)])
        #expect(fromQuery == DeleteOptions(updatedAt: Timestamp(rfc3339: "2025-01-01T00:00:00Z"), reassignCategoryID: target))
        let bodyWins = try DeleteOptions(
            body: json(#"{"updated_at":"2025-02-01T00:00:00Z"}"#), query: [(name: "updated_at", value: "2025-01-01T00:00:00Z")])
        #expect(bodyWins.updatedAt == Timestamp(rfc3339: "2025-02-01T00:00:00Z"))
        #expect(throws: RequestDecodingError.invalid("body", "must be a JSON object")) { try DeleteOptions(body: try json("[]"), query: []) }
        #expect(throws: RequestDecodingError.invalid("updated_at", "must be an RFC 3339 timestamp")) {
            try DeleteOptions(body: nil, query: [(name: "updated_at", value: "soon")])
        }
        #expect(throws: RequestDecodingError.invalidUUID(FieldIssue(field: "reassign_category_id", message: "must be a UUID"))) {
            try DeleteOptions(body: try json(#"{"reassign_category_id":"nope"}"#), query: [])
        }
    }

    @Test("a query parameter given more than once counts with its first value, for delete options as for every other")
    func repeatedQueryParameters() throws {
        let repeated = try DeleteOptions(
            body: nil, query: [(name: "updated_at", value: "2025-01-01T00:00:00Z"), (name: "updated_at", value: "2025-02-01T00:00:00Z")])
        #expect(repeated.updatedAt == Timestamp(rfc3339: "2025-01-01T00:00:00Z"))
        let parameters = QueryParameters(items: [(name: "size", value: "5"), (name: "size", value: "900")])
        #expect(try parameters.int("size", in: 1...100, default: 50) == 5)
    }
}
