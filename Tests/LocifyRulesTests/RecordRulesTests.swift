import LocifyRules
import Testing

@Suite("Record rules: values in, the server's verdict out")
struct RecordRulesTests {
    @Test("a valid category write is normalised as the server stores it")
    func categoryFields() throws {
        let fields = try CategoryFields(name: "  Cafés \u{3000}", icon: "HTTPS://example.com/i.png")
        #expect(fields.name == "Cafés" && fields.icon == "HTTPS://example.com/i.png")
    }

    @Test("the first broken rule of a location write is reported, in field order")
    func locationOrder() {
        #expect(throws: RuleViolation.invalidInput(field: "name", reason: "must not be empty")) {
            try LocationFields(name: " ", address: nil, description: nil, latitude: 100, longitude: 0, isFavorite: false, imageURLs: [])
        }
        #expect(throws: RuleViolation.invalidCoordinates(field: "latitude", reason: "must be between -90 and 90")) {
            try LocationFields(name: "a", address: nil, description: nil, latitude: 100, longitude: 200, isFavorite: false, imageURLs: [])
        }
        #expect(throws: RuleViolation.invalidCoordinates(field: "latitude", reason: "must be between -90 and 90")) {
            try LocationFields(name: "a", address: nil, description: nil, latitude: .nan, longitude: 0, isFavorite: false, imageURLs: [])
        }
    }

    @Test("a profile name is trimmed, and refused on its field like a record's name")
    func profileName() throws {
        #expect(try ProfileRules.name("  Ada \u{3000}") == "Ada")
        #expect(throws: RuleViolation.invalidInput(field: "name", reason: "must not be empty")) { try ProfileRules.name(" ") }
        #expect(throws: RuleViolation.invalidInput(field: "name", reason: "must not contain control characters")) {
            try ProfileRules.name("a\u{7}")
        }
    }

    @Test("empty address and description become nil")
    func blankTexts() throws {
        let fields = try LocationFields(
            name: "a", address: " \n", description: "", latitude: -90, longitude: 180, isFavorite: true, imageURLs: [])
        #expect(fields.address == nil && fields.description == nil && fields.isFavorite)
    }

    @Test("violations carry the API's code, field and message")
    func violations() {
        let empty = RuleViolation.invalidInput(field: "name", reason: "must not be empty")
        #expect(empty.code == .invalidInput && empty.field == "name" && empty.message == "name must not be empty")
        let latitude = RuleViolation.invalidCoordinates(field: "latitude", reason: "must be between -90 and 90")
        #expect(latitude.code == .invalidCoordinates && latitude.code.httpStatus == 400)
        #expect(RuleViolation.unknownCategory.code == .notFound && RuleViolation.unknownCategory.field == nil)
        #expect(RuleViolation.unknownCategory.message == "category not found")
    }

    @Test("the error table: every code once, with its status")
    func errorTable() {
        #expect(Set(ErrorCode.allCases.map(\.rawValue)).count == ErrorCode.allCases.count)
        #expect(ErrorCode(rawValue: "E008")?.httpStatus == 409 && ErrorCode(rawValue: "S003")?.httpStatus == 503)
        #expect(ErrorCode(rawValue: "E013") == nil)
    }
}
