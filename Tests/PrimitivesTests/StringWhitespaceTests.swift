import Primitives
import Testing

@Suite("Whitespace trimming as Foundation's CharacterSet.whitespaces")
struct StringWhitespaceTests {
    @Test("trims spaces, tabs and other space separators at both ends, never inside")
    func trimsHorizontalWhitespace() {
        #expect(" \t 8080\t ".trimmingWhitespaces() == "8080")
        #expect("\u{00A0}\u{2003}\u{3000}host name\u{202F}".trimmingWhitespaces() == "host name")
        #expect("a \t b".trimmingWhitespaces() == "a \t b")
        #expect("".trimmingWhitespaces() == "")
        #expect(" \t\u{00A0} ".trimmingWhitespaces() == "")
    }

    @Test("keeps line breaks and other control characters, which are not in the set")
    func keepsLineBreaks() {
        #expect("\n8080\r\n".trimmingWhitespaces() == "\n8080\r\n")
        #expect(" \u{0B}x\u{0C} ".trimmingWhitespaces() == "\u{0B}x\u{0C}")
        #expect(" \u{2028}x ".trimmingWhitespaces() == "\u{2028}x")
    }

    @Test("trims by Unicode scalar: a combining mark after a space stays with it")
    func trimsByScalar() {
        #expect("x \u{0301}".trimmingWhitespaces() == "x \u{0301}")
        #expect(" \u{0301}x".trimmingWhitespaces() == "\u{0301}x")
    }
}
