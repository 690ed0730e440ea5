import Foundation
import Testing

@testable import Locify

/// Drafts built from values in code pass the same rules as drafts decoded from a request body:
/// the domain validates them, not the JSON layer (openapi.yaml).
@Suite("Drafts built from values are validated and normalised by the domain")
struct DraftValidationTests {
    let id = UUID()

    @Test("a category draft trims its name and refuses an empty name, a control character or a non-https icon")
    func category() throws {
        #expect(try CategoryDraft(id: id, name: "  Food \n").name == "Food")
        #expect(throws: LocifyError.invalid("name", "must not be empty")) { try CategoryDraft(id: id, name: " \t ") }
        #expect(throws: LocifyError.invalid("name", "must not contain control characters")) { try CategoryDraft(id: id, name: "a\u{7}b") }
        #expect(throws: LocifyError.invalid("name", "must be at most 255 characters")) {
            try CategoryDraft(id: id, name: String(repeating: "é", count: 256))
        }
        #expect(throws: LocifyError.invalid("icon", "must be an absolute https URL")) {
            try CategoryDraft(id: id, name: "a", icon: "http://example.com/a.png")
        }
        #expect(try CategoryDraft(id: id, name: "a", icon: "https://example.com/a.png").icon == "https://example.com/a.png")
    }

    @Test("a location draft refuses coordinates out of range (E003) and bad image URLs, and turns blank text into nil")
    func location() throws {
        let category = UUID()
        #expect(throws: LocifyError.invalidCoordinates(FieldIssue(field: "latitude", message: "must be between -90 and 90"))) {
            try LocationDraft(id: id, categoryID: category, name: "P", latitude: 90.5, longitude: 0)
        }
        #expect(throws: LocifyError.invalidCoordinates(FieldIssue(field: "longitude", message: "must be between -180 and 180"))) {
            try LocationDraft(id: id, categoryID: category, name: "P", latitude: 0, longitude: -181)
        }
        #expect(throws: LocifyError.invalid("image_urls", "must not contain duplicates")) {
            try LocationDraft(id: id, categoryID: category, name: "P", latitude: 0, longitude: 0, imageURLs: ["https://x.example/a", "https://x.example/a"])
        }
        #expect(throws: LocifyError.invalid("image_urls", "must hold at most 10 URLs")) {
            try LocationDraft(
                id: id, categoryID: category, name: "P", latitude: 0, longitude: 0, imageURLs: (0...10).map { "https://x.example/\($0)" })
        }
        #expect(throws: LocifyError.invalid("description", "must not contain control characters other than tab and line breaks")) {
            try LocationDraft(id: id, categoryID: category, name: "P", description: "a\u{0}b", latitude: 0, longitude: 0)
        }
        let draft = try LocationDraft(id: id, categoryID: category, name: " P ", address: "   ", description: "a\nb", latitude: -90, longitude: 180)
        #expect(draft.name == "P" && draft.address == nil && draft.description == "a\nb")
    }

    @Test("the rules are checked in field order: the first broken one is reported")
    func fieldOrder() {
        #expect(throws: LocifyError.invalid("name", "must not be empty")) {
            try LocationDraft(id: id, categoryID: id, name: "", latitude: 100, longitude: 0, imageURLs: ["ftp://x"])
        }
        #expect(throws: LocifyError.invalidCoordinates(FieldIssue(field: "longitude", message: "must be between -180 and 180"))) {
            try LocationDraft(id: id, categoryID: id, name: "P", latitude: 0, longitude: 200, imageURLs: ["ftp://x"])
        }
    }
}
