import Foundation
import JSON
import Locify
import LocifyRules
import Testing

@testable import LocifyAPI

/// `LocifyRules` is what the server applies: for each broken rule, the code and message a client
/// gets from `CategoryFields`/`LocationFields` are the ones the server answers the same body with.
@Suite("Shared rules refuse as the server does")
struct SharedRulesTests {
    static let id = "6c2f54c9-801e-5a83-bd62-9cb6d70037af"
    static let longName = String(repeating: "n", count: 256)
    static let storageURL = "https://storage.googleapis.com/bucket/a%00b"
    static let tooManyURLs = (0...10).map { "https://example.com/\($0).jpg" }

    /// The server's answer to a body, as code and message.
    func serverAnswer(_ decode: () throws(RequestDecodingError) -> Void) -> (ErrorCode, String)? {
        do throws(RequestDecodingError) {
            try decode()
            return nil
        } catch {
            let answer = APIError(error)
            return (answer.code, answer.message)
        }
    }

    func jsonString(_ text: String) -> String {
        String(decoding: JSONWriter.encode(.string(text)), as: UTF8.self)
    }

    @Test(
        "category names and icons",
        arguments: [
            ("   ", nil), (longName, nil), ("a\u{7}b", nil), ("ok", "http://example.com/i.png"), ("ok", "https://"),
            ("ok", storageURL), ("ok", "https://example.com/" + String(repeating: "x", count: 2048)),
        ] as [(String, String?)])
    func category(name: String, icon: String?) throws {
        var violation: RuleViolation?
        do throws(RuleViolation) { _ = try CategoryFields(name: name, icon: icon) } catch { violation = error }
        let shared = try #require(violation)
        let iconMember = icon.map { #","icon":\#(jsonString($0))"# } ?? ""
        let body = try JSONParser.parse(#"{"id":"\#(Self.id)","name":\#(jsonString(name))\#(iconMember)}"#)
        let server = try #require(serverAnswer { () throws(RequestDecodingError) in _ = try CategoryDraft(json: body, userID: "u") })
        #expect(server.0 == shared.code && server.1 == shared.message)
    }

    @Test(
        "location fields: text, coordinates, URLs and their count",
        arguments: [
            ("", nil, 0.0, 0.0, []), ("ok", String(repeating: "a", count: 1001), 0.0, 0.0, []),
            ("ok", "a\u{0}b", 0.0, 0.0, []), ("ok", nil, 90.5, 0.0, []), ("ok", nil, 0.0, -180.5, []),
            ("ok", nil, 0.0, 0.0, tooManyURLs), ("ok", nil, 0.0, 0.0, ["https://a.example/x", "https://a.example/x"]),
            ("ok", nil, 0.0, 0.0, ["ftp://a.example/x"]), ("ok", nil, 0.0, 0.0, [storageURL]),
        ] as [(String, String?, Double, Double, [String])])
    func location(name: String, address: String?, latitude: Double, longitude: Double, imageURLs: [String]) throws {
        var violation: RuleViolation?
        do throws(RuleViolation) {
            _ = try LocationFields(
                name: name, address: address, description: nil, latitude: latitude, longitude: longitude, isFavorite: false,
                imageURLs: imageURLs)
        } catch {
            violation = error
        }
        let shared = try #require(violation)
        let addressMember = address.map { #","address":\#(jsonString($0))"# } ?? ""
        let urls = imageURLs.map(jsonString).joined(separator: ",")
        let body = try JSONParser.parse(
            #"{"id":"\#(Self.id)","category_id":"\#(Self.id)","name":\#(jsonString(name))\#(addressMember),"latitude":\#(latitude),"longitude":\#(longitude),"image_urls":[\#(urls)]}"#
        )
        let server = try #require(serverAnswer { () throws(RequestDecodingError) in _ = try LocationDraft(json: body, userID: "u") })
        #expect(server.0 == shared.code && server.1 == shared.message)
    }

    @Test("an unknown category and a reassign onto the deleted category answer as the server does")
    func references() {
        #expect(APIError(LocifyError(.unknownCategory)).code == .notFound)
        #expect(APIError(LocifyError(.unknownCategory)).message == RuleViolation.unknownCategory.message)
        let id = UUID()
        #expect(throws: RuleViolation.invalidInput(field: "reassign_category_id", reason: "must not be the category being deleted")) {
            try CategoryRules.checkReassignTarget(id, deleting: id)
        }
        #expect(throws: RuleViolation.unknownCategory) { try CategoryRules.checkReassignTarget(isKnown: false) }
        #expect(throws: RuleViolation.unknownCategory) { try LocationRules.checkCategory(isLive: false) }
    }
}
