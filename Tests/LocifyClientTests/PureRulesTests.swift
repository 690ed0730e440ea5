import Foundation
import LocifyRules
import Testing

@testable import LocifyClient

/// The client's side of the rules it shares with the server (`LocifyRules`): its dates are written
/// and read by the shared `Timestamp` rule, and its errors decode every code of the shared
/// `ErrorCode` table answered with that table's status; the expectations come from the rules
/// themselves, not from copies of them.
@Suite("LocifyClient pure rules: timestamps, error decoding")
struct PureRulesTests {
    @Test("dates travel as the server writes them (the shared Timestamp rule), read back to the same millisecond")
    func timestamps() throws {
        struct Stamped: Codable, Equatable { var at: Date }
        for value: Int64 in [1_748_733_300_123, 1_748_733_300_999, 1_000_000_000_001, 4_102_444_800_007, 0, -1] {
            let date = Date(locifyMilliseconds: value)
            #expect(date.locifyMilliseconds == value, "no floating-point drift")
            let json = try JSONCoding.encoder.encode(Stamped(at: date))
            #expect(String(decoding: json, as: UTF8.self) == #"{"at":"\#(Timestamp(milliseconds: value).rfc3339)"}"#)
            #expect(try JSONCoding.decoder.decode(Stamped.self, from: json).at.locifyMilliseconds == value)
        }
        #expect(Timestamp(milliseconds: 1_748_733_300_123).rfc3339 == "2025-05-31T23:15:00.123Z", "the form openapi.yaml shows")
        // What the shared parser refuses, the client refuses.
        for text in ["not a date", "2025-05-31T23:15:00.123", "2025-02-30T00:00:00.000Z"] {
            #expect(Timestamp(rfc3339: text) == nil, "\(text)")
            #expect(throws: DecodingError.self, "\(text)") {
                try JSONCoding.decoder.decode(Stamped.self, from: Data(#"{"at":"\#(text)"}"#.utf8))
            }
        }
    }

    @Test("error bodies decode to the code's case; E008 carries the server's record or tombstone")
    func errorDecoding() throws {
        let conflict = Data(
            #"{"error":{"code":"E008","message":"newer"},"data":{"id":"9b2f5c1e-4f0a-4c6e-8a53-2d1f0e7c9a10","deleted":true,"deleted_at":"2025-06-01T08:00:00.000Z"}}"#
                .utf8)
        let error = LocifyError.decode(status: 409, body: conflict, kind: .location, requestID: "r1", retryAfter: nil)
        guard case .conflict(let body, let record) = error else {
            Issue.record("expected conflict, got \(error)")
            return
        }
        #expect(body.code == "E008")
        #expect(body.requestID == "r1")
        let expectedID = try #require(UUID(uuidString: "9b2f5c1e-4f0a-4c6e-8a53-2d1f0e7c9a10"))
        #expect(record == .tombstone(.location, Tombstone(id: expectedID, deletedAt: Date(locifyMilliseconds: 1_748_764_800_000))))

        let categoryConflict = Data(
            #"{"error":{"code":"E008","message":"newer"},"data":{"id":"a1050188-e456-5998-8293-a282220c9930","user_id":"alice","name":"Coffee","icon":null,"is_default":true,"location_count":3,"sync_status":"synced","version":4,"created_at":"1970-01-01T00:00:00.000Z","updated_at":"2025-06-01T08:00:00.000Z"}}"#
                .utf8)
        let decoded = LocifyError.decode(status: 409, body: categoryConflict, kind: .category, requestID: nil, retryAfter: nil)
        guard case .conflict(_, .category(let category)) = decoded else {
            Issue.record("expected a category conflict, got \(decoded)")
            return
        }
        #expect(category.name == "Coffee" && category.version == 4 && category.isDefault)

        // Every other code of the shared table, answered with the table's status.
        #expect(Set(Self.clientCase.keys) == Set(ErrorCode.allCases), "every shared code has its client case")
        for code in ErrorCode.allCases where code != .conflict {
            let body = Data(#"{"error":{"code":"\#(code.rawValue)","message":"m","details":[{"field":"name","message":"bad"}]}}"#.utf8)
            let error = LocifyError.decode(status: code.httpStatus, body: body, kind: nil, requestID: nil, retryAfter: 3)
            #expect(Mirror(reflecting: error).children.first?.label == Self.clientCase[code], "\(code.rawValue) decoded as \(error)")
            if code == .rateLimited || code == .unavailable {
                let server = try #require(error.serverError)
                #expect([LocifyError.rateLimited(server, retryAfter: 3), .unavailable(server, retryAfter: 3)].contains(error), "Retry-After")
            }
            #expect(error.code == code.rawValue)
            #expect(error.serverError?.details == [ServerError.FieldDetail(field: "name", message: "bad")])
        }
        let unknown = LocifyError.decode(
            status: 400, body: Data(#"{"error":{"code":"E999","message":"m"}}"#.utf8), kind: nil, requestID: nil, retryAfter: nil)
        #expect(unknown.code == "E999")
        if case .unknownCode = unknown {} else { Issue.record("expected unknownCode, got \(unknown)") }
        let notJSON = LocifyError.decode(status: 502, body: Data("<html>".utf8), kind: nil, requestID: nil, retryAfter: nil)
        #expect(notJSON == .unexpectedResponse(status: 502, body: "<html>"))
    }

    @Test("push results decode applied records, conflicts with E008 and errors")
    func pushResults() throws {
        let body = Data(
            #"""
            {"results":[
              {"type":"location","id":"0d3c9a7e-51d4-4b58-9f3e-6f1b2a4c8e21","status":"error","error":{"code":"E007","message":"category not found"}},
              {"type":"category","id":"3f0e1c55-8f6a-4d7e-9d55-0c0f5d7f1a01","status":"conflict","error":{"code":"E008","message":"newer"},
               "data":{"id":"3f0e1c55-8f6a-4d7e-9d55-0c0f5d7f1a01","deleted":true,"deleted_at":"2025-06-01T08:00:00.000Z"}}
            ]}
            """#.utf8)
        struct Response: Decodable { var results: [PushResult] }
        let results = try JSONCoding.decoder.decode(Response.self, from: body).results
        #expect(results[0].status == .error)
        #expect(results[0].error?.code == "E007")
        #expect(results[1].status == .conflict)
        guard case .conflict(_, .tombstone(.category, _))? = results[1].error else {
            Issue.record("expected E008 with a tombstone, got \(String(describing: results[1].error))")
            return
        }
    }

    /// The client's case for each code of the shared table; a code added to the table fails the
    /// test until the client maps it.
    static let clientCase: [ErrorCode: String] = [
        .invalidInput: "invalidInput", .invalidUUID: "invalidUUID", .invalidCoordinates: "invalidCoordinates",
        .missingField: "missingField", .unauthenticated: "unauthorized", .forbidden: "forbidden", .notFound: "notFound",
        .conflict: "conflict", .cursorExpired: "cursorExpired", .bodyTooLarge: "payloadTooLarge",
        .methodNotAllowed: "methodNotAllowed", .unsupportedMediaType: "unsupportedMediaType", .rateLimited: "rateLimited",
        .internalError: "serverError", .unavailable: "unavailable",
    ]
}
