import Foundation
import JSON
import Locify
import LocifyRules
import Testing

@testable import LocifyAPI

@Suite("Push bodies decode into domain changes, a bad change failing alone (openapi.yaml)")
struct PushChangeDecodingTests {
    let id = "1F3599BE-6E0E-5CF8-AA59-B97DFDC46AEC"

    func change(_ text: String) throws -> PushedChange { PushedChange(json: try JSONParser.parse(text), userID: "u") }

    @Test("a batch that is not an object with a changes array is refused as a whole")
    func malformedBatch() throws {
        let cases: [(String, RequestDecodingError)] = [
            ("[]", .invalid("body", "must be a JSON object")),
            (#"{"other":1}"#, .missingField("changes")),
            (#"{"changes":null}"#, .missingField("changes")),
            (#"{"changes":{}}"#, .invalid("changes", "must be an array")),
        ]
        for (text, error) in cases {
            let body = try JSONParser.parse(text)
            #expect(throws: error, "\(text)") { try PushedChange.batch(json: body, userID: "u") }
        }
        #expect(try PushedChange.batch(json: try JSONParser.parse(#"{"changes":[]}"#), userID: "u") == [])
    }

    @Test("a well-formed change becomes its operation with a validated draft; the reported id is lower-case")
    func wellFormed() throws {
        let created = try change(#"{"type":"category","action":"create","data":{"id":"\#(id)","name":"  Food "}}"#)
        let uuid = try #require(UUID(apiString: id))
        #expect(created == PushedChange(type: "category", id: id.lowercased(), change: .success(.createCategory(try CategoryDraft(id: uuid, name: "Food")))))
        let deleted = try change(#"{"type":"category","action":"delete","data":{"id":"\#(id)","reassign_category_id":"\#(id)"}}"#)
        #expect(deleted.change == .success(.deleteCategory(id: uuid, DeleteOptions(reassignCategoryID: uuid))))
        let location = try change(
            #"{"type":"location","action":"update","data":{"id":"\#(id)","category_id":"\#(id)","name":"P","latitude":1,"longitude":2}}"#)
        #expect(location.change == .success(.updateLocation(try LocationDraft(id: uuid, categoryID: uuid, name: "P", latitude: 1, longitude: 2))))
    }

    @Test("envelope problems are reported type first, then action, then data; the id is reported as sent")
    func envelope() throws {
        #expect(try change(#""x""#) == PushedChange(type: nil, id: nil, change: .failure(.invalid("changes", "every change must be an object"))))
        #expect(try change(#"{"type":"tag","action":"erase","data":5}"#).change == .failure(.invalid("type", "must be category or location")))
        #expect(try change(#"{"type":"location","action":"erase","data":5}"#).change == .failure(.invalid("action", "must be create, update, patch or delete")))
        #expect(try change(#"{"type":"location","action":"create","data":5}"#).change == .failure(.invalid("data", "must be an object")))
        #expect(try change(#"{"type":"location","action":"create"}"#).change == .failure(.missingField("data")))
        let notUUID = try change(#"{"type":7,"action":"delete","data":{"id":"Not-A-UUID"}}"#)
        #expect(notUUID.type == nil && notUUID.id == "Not-A-UUID")
    }

    @Test("a draft or delete that breaks a rule fails its change with the draft's error")
    func badData() throws {
        #expect(
            try change(#"{"type":"category","action":"update","data":{"id":"\#(id)","name":""}}"#).change
                == .failure(.refused(.invalid("name", "must not be empty"))))
        #expect(
            try change(#"{"type":"location","action":"create","data":{"id":"\#(id)","category_id":"\#(id)","name":"P","latitude":100,"longitude":2}}"#)
                .change == .failure(.refused(.invalidCoordinates(FieldIssue(field: "latitude", message: "must be between -90 and 90")))))
        #expect(try change(#"{"type":"location","action":"delete","data":{}}"#).change == .failure(.missingField("id")))
        #expect(
            try change(#"{"type":"location","action":"delete","data":{"id":"\#(id)","updated_at":"later"}}"#).change
                == .failure(.invalid("updated_at", "must be an RFC 3339 timestamp")))
        #expect(
            try change(#"{"type":"category","action":"create","data":{"id":"\#(id)","name":"a","user_id":"v"}}"#).change
                == .failure(.forbidden(FieldIssue(field: "user_id", message: "must be the authenticated user's id"))))
    }

    @Test("the kinds' wire names are the API's: a change's type, a feed change's type, the noun of E007")
    func kindNames() throws {
        #expect(RecordKind.allCases.map(\.wireName) == ["category", "location"])
        #expect(RecordKind.allCases.allSatisfy { RecordKind(wireName: $0.wireName) == $0 })
        #expect(RecordKind(wireName: "Category") == nil && RecordKind(wireName: "") == nil)
        let message = { (kind: RecordKind) in APIError(LocifyError.notFound(kind)).message }
        #expect(message(.category) == "category not found" && message(.location) == "location not found")
        var feed = JSONWriter(reservingCapacity: 256)
        feed.feedChange(.tombstone(.location, id: UUID(), deletedAt: Timestamp(milliseconds: 0)), userID: "u")
        #expect(String(decoding: feed.bytes, as: UTF8.self).hasPrefix(#"{"type":"location","action":"delete""#))
    }

    @Test("a batch over the domain's limit is E001 on changes, answered like any decoding error")
    func tooManyChanges() {
        let error = APIError(LocifyError.tooManyChanges(limit: 50))
        #expect(error.code == .invalidInput && error.message == "changes must hold at most 50 changes")
        #expect(error.details == [FieldIssue(field: "changes", message: "must hold at most 50 changes")])
    }
}
