import Foundation
import Testing

@testable import LocifyClient

@Suite("LocifyClient pure rules: timestamps, error decoding")
struct PureRulesTests {
    @Test("dates travel as the server writes them: RFC 3339 at whole milliseconds, read back to the same millisecond")
    func timestamps() throws {
        struct Stamped: Codable, Equatable { var at: Date }
        for value: Int64 in [1_748_733_300_123, 1_748_733_300_999, 1_000_000_000_001, 4_102_444_800_007, 0, -1] {
            let date = Date(locifyMilliseconds: value)
            #expect(date.locifyMilliseconds == value, "no floating-point drift")
            let json = try JSONCoding.encoder.encode(Stamped(at: date))
            #expect(try JSONCoding.decoder.decode(Stamped.self, from: json).at.locifyMilliseconds == value)
        }
        #expect(String(decoding: try JSONCoding.encoder.encode(Stamped(at: Date(locifyMilliseconds: 1_748_733_300_123))), as: UTF8.self)
            == #"{"at":"2025-05-31T23:15:00.123Z"}"#)
        #expect(throws: DecodingError.self) { try JSONCoding.decoder.decode(Stamped.self, from: Data(#"{"at":"not a date"}"#.utf8)) }
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

        let codes: [(String, Int, (LocifyError) -> Bool)] = [
            ("E001", 400, { if case .invalidInput = $0 { true } else { false } }),
            ("E002", 400, { if case .invalidUUID = $0 { true } else { false } }),
            ("E003", 400, { if case .invalidCoordinates = $0 { true } else { false } }),
            ("E004", 400, { if case .missingField = $0 { true } else { false } }),
            ("E005", 401, { if case .unauthorized = $0 { true } else { false } }),
            ("E006", 403, { if case .forbidden = $0 { true } else { false } }),
            ("E007", 404, { if case .notFound = $0 { true } else { false } }),
            ("E009", 410, { if case .cursorExpired = $0 { true } else { false } }),
            ("E010", 413, { if case .payloadTooLarge = $0 { true } else { false } }),
            ("E011", 405, { if case .methodNotAllowed = $0 { true } else { false } }),
            ("E012", 415, { if case .unsupportedMediaType = $0 { true } else { false } }),
            ("S001", 429, { if case .rateLimited(_, retryAfter: 3) = $0 { true } else { false } }),
            ("S002", 500, { if case .serverError = $0 { true } else { false } }),
            ("S003", 503, { if case .unavailable(_, retryAfter: 3) = $0 { true } else { false } }),
            ("E999", 400, { if case .unknownCode = $0 { true } else { false } }),
        ]
        for (code, status, matches) in codes {
            let body = Data(#"{"error":{"code":"\#(code)","message":"m","details":[{"field":"name","message":"bad"}]}}"#.utf8)
            let error = LocifyError.decode(status: status, body: body, kind: nil, requestID: nil, retryAfter: 3)
            #expect(matches(error), "\(code) decoded as \(error)")
            #expect(error.code == code)
            #expect(error.serverError?.details == [ServerError.FieldDetail(field: "name", message: "bad")])
        }
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
}
