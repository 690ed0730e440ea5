import Testing

@testable import LocifyRules

@Suite("Text rules (openapi.yaml)")
struct TextRulesTests {
    @Test("names are trimmed of Unicode whitespace")
    func trimsNames() throws {
        #expect(try TextRules.name("  Food \u{3000}\n", field: "name") == "Food")
        #expect(try TextRules.name("\u{00A0}Café", field: "name") == "Café")
    }

    @Test("names must have 1 to 255 code points after trimming")
    func nameLength() throws {
        #expect(throws: RuleViolation.invalidInput(field: "name", reason: "must not be empty")) { try TextRules.name("   ", field: "name") }
        #expect(try TextRules.name(String(repeating: "é", count: 255), field: "name").unicodeScalars.count == 255)
        #expect(throws: RuleViolation.self) { try TextRules.name(String(repeating: "a", count: 256), field: "name") }
        // 255 emoji are 255 code points even though they take 4 UTF-8 bytes each.
        #expect(try TextRules.name(String(repeating: "😀", count: 255), field: "name").count == 255)
    }

    @Test("names refuse every control character (Cc), NUL, DEL and C1 included", arguments: ["\u{0}", "\u{1}", "\u{7F}", "\u{85}", "\u{9F}", "a\tb", "a\nb"])
    func nameControls(_ inner: String) {
        #expect(throws: RuleViolation.self) { try TextRules.name("x\(inner)y", field: "name") }
    }

    @Test("address and description allow tab and line breaks but no other control character")
    func longTextControls() throws {
        #expect(try TextRules.longText("line 1\r\nline 2\tend", field: "address") == "line 1\r\nline 2\tend")
        #expect(throws: RuleViolation.self) { try TextRules.longText("a\u{0}b", field: "address") }
        #expect(throws: RuleViolation.self) { try TextRules.longText("a\u{1B}b", field: "description") }
    }

    @Test("empty or all-whitespace address becomes null")
    func blankLongText() throws {
        #expect(try TextRules.longText("", field: "address") == nil)
        #expect(try TextRules.longText(" \n\t ", field: "address") == nil)
    }

    @Test("address is at most 1000 code points")
    func longTextLength() throws {
        #expect(try TextRules.longText(String(repeating: "ß", count: 1000), field: "address") != nil)
        #expect(throws: RuleViolation.self) { try TextRules.longText(String(repeating: "a", count: 1001), field: "address") }
    }

    @Test(
        "https URLs with a host are accepted in any scheme case",
        arguments: [
            "https://example.com", "HTTPS://example.com/a.jpg", "https://firebasestorage.googleapis.com/v0/b/x/o/a%2Fb?alt=media&token=1",
            "https://user@host:8443/p", "https://[::1]:443/x",
        ])
    func acceptsURLs(_ url: String) {
        #expect(TextRules.isHTTPSURL(url))
    }

    @Test(
        "everything else is refused",
        arguments: [
            "", "http://example.com", "file:///tmp/a.jpg", "content://media/1", "https://", "https:///path", "https://exa mple.com",
            "https://example.com/a b", "https://example.com/\u{0}", "example.com", "//example.com", "https://host:port/",
            "https://host:123456/", "ftp://example.com", "https:example.com", "https://@/x",
        ])
    func refusesURLs(_ url: String) {
        #expect(!TextRules.isHTTPSURL(url))
    }

    @Test("URLs are at most 2048 code points")
    func urlLength() throws {
        let base = "https://example.com/"
        let ok = base + String(repeating: "a", count: 2048 - base.count)
        #expect(try TextRules.httpsURL(ok, field: "icon") == ok)
        #expect(throws: RuleViolation.self) { try TextRules.httpsURL(ok + "a", field: "icon") }
    }
}
