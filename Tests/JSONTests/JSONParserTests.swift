import JSON
import Testing

private func parse(_ text: String) throws(JSONParseError) -> JSONValue {
    try JSONParser.parse(Array(text.utf8))
}

private func parseBytes(_ bytes: [UInt8]) -> Result<JSONValue, JSONParseError> {
    do throws(JSONParseError) {
        return .success(try JSONParser.parse(bytes))
    } catch {
        return .failure(error)
    }
}

@Suite("JSONParser")
struct JSONParserTests {
    /// Documents RFC 8259 allows (in the spirit of JSONTestSuite's y_ cases), with the value each
    /// one parses to.
    static let accepted: [(String, JSONValue)] = [
        ("null", nil), ("true", true), ("false", false), ("0", 0), ("-0", .number(-0.0)), ("1", 1), ("-1", -1),
        ("0.5", 0.5), ("-0.5", -0.5), ("1e5", 100_000), ("1E5", 100_000), ("1e+5", 100_000), ("1e-5", 0.000_01),
        ("1.5e3", 1500), ("123456789012345678901234567890", .number(123_456_789_012_345_678_901_234_567_890.0)),
        ("1e-400", 0), ("\"\"", ""), ("\"a\"", "a"), ("\" \\\" \\\\ \\/ \\b \\f \\n \\r \\t \"", " \" \\ / \u{08} \u{0C} \n \r \t "),
        ("\"\\u0000\"", "\u{0}"), ("\"\\u00e9\"", "é"), ("\"\\uD83D\\uDE00\"", "😀"), ("\"é€😀\"", "é€😀"), ("[]", []),
        ("{}", .object(JSONObject())), ("[1,2,3]", [1, 2, 3]), (" [ 1 , 2 ] ", [1, 2]),
        ("{\"a\":1,\"b\":[true,false,null],\"c\":{\"d\":\"e\"}}", ["a": 1, "b": [true, false, nil], "c": ["d": "e"]]),
        ("\t\r\n 1 \t\r\n", 1), ("[[[]]]", [[[]]]), ("{\"\":0}", ["": 0]), ("\"\u{7F}\"", "\u{7F}"),
        ("[1e22, 1e23, 9007199254740993]", [.number(1e22), .number(1e23), .number(9_007_199_254_740_992)]),
        ("{\"a\":{\"a\":1}}", ["a": ["a": 1]]),
    ]

    /// Documents that must be refused (JSONTestSuite's n_ cases and our stricter choices).
    static let rejected: [String] = [
        "", " ", "nul", "truth", "True", "NaN", "Infinity", "-Infinity", "+1", "01", "-01", "00", "1.", ".5", "1.e3",
        "1e", "1e+", "-", "--1", "0x10", "1 2", "[1,]", "[,1]", "[1,,2]", "{\"a\":1,}", "{,}", "{\"a\" 1}", "{\"a\":}",
        "{a:1}", "{'a':1}", "['a']", "[1", "{\"a\":1", "\"abc", "]", "}", "[1]]", "{}}", "/* c */ 1", "1 // c",
        "\"\\x41\"", "\"\\u12\"", "\"\\uZZZZ\"", "\"\\uD800\"", "\"\\uDC00\"", "\"\\uD800\\u0041\"", "\"\\uD800x\"",
        "\"a\u{01}b\"", "\"tab\there\"", "\"new\nline\"", "{\"a\":1,\"a\":2}", "1e400", "-1e400", "[1e999]",
        "\u{FEFF}1", "[] []", "null x",
    ]

    @Test("accepts every valid document of the table, with its value", arguments: accepted)
    func acceptsValid(_ text: String, _ value: JSONValue) throws {
        let parsed = try parse(text)
        #expect(parsed == value)
        // == on Double equates 0 and -0: the sign is checked apart.
        if case .number(let expected) = value, case .number(let number) = parsed {
            #expect(number.sign == expected.sign)
        }
    }

    @Test("rejects every invalid document of the table", arguments: rejected)
    func rejectsInvalid(_ text: String) {
        #expect(throws: JSONParseError.self) { try parse(text) }
    }

    @Test("maps scalars and containers to values")
    func mapsValues() throws {
        let value = try parse(#"{"s":"x","n":-12.5,"i":42,"t":true,"f":false,"z":null,"a":[1,"2"],"o":{}}"#)
        let expected: JSONValue = [
            "s": "x", "n": -12.5, "i": 42, "t": true, "f": false, "z": nil, "a": [1, "2"], "o": .object(JSONObject()),
        ]
        #expect(value == expected)
        #expect(value.objectValue?.keys == ["s", "n", "i", "t", "f", "z", "a", "o"])
        #expect(value.objectValue?["i"]?.int64Value == 42)
        #expect(value.objectValue?["n"]?.int64Value == nil)
    }

    @Test("decodes escapes, surrogate pairs and NUL")
    func decodesEscapes() throws {
        #expect(try parse(#""a\"b\\c\/d\b\f\n\r\t""#) == .string("a\"b\\c/d\u{08}\u{0C}\n\r\t"))
        #expect(try parse(#""\u00e9\u20AC\uD83D\uDE00""#) == .string("é€😀"))
        #expect(try parse(#""\u0000""#) == .string("\u{0}"))
        #expect(try parse("\"héllo \\n wörld\"") == .string("héllo \n wörld"))
    }

    @Test("numbers are parsed exactly")
    func parsesNumbers() throws {
        let cases: [(String, Double)] = [
            ("0", 0), ("-0", -0.0), ("1.5", 1.5), ("0.1", 0.1), ("1e-7", 1e-7), ("123.456e2", 12345.6),
            ("1.7976931348623157e308", 1.7976931348623157e308), ("5e-324", .leastNonzeroMagnitude), ("1e-400", 0),
            ("9007199254740993", 9007199254740992), ("0.30000000000000004", 0.30000000000000004),
            ("-122.4194155", -122.4194155), ("37.7749295", 37.7749295), ("12345678901234567890", 12345678901234567168),
        ]
        for (text, expected) in cases {
            #expect(try parse(text) == .number(expected), "\(text)")
        }
        #expect(try parse("-0").numberValue?.sign == .minus)
    }

    @Test("invalid UTF-8 in strings is an error", arguments: [
        [0x22, 0xC3, 0x22], [0x22, 0xC0, 0x80, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22],
        [0x22, 0xFF, 0x22], [0x22, 0x80, 0x22], [0x22, 0xE0, 0x80, 0x80, 0x22], [0x22, 0xF0, 0x80, 0x80, 0x80, 0x22],
        [0x22, 0x5C, 0x6E, 0xC3, 0x28, 0x22], [0xC3, 0xA9],
    ] as [[UInt8]])
    func rejectsInvalidUTF8(_ bytes: [UInt8]) {
        #expect(throws: JSONParseError.self) { try JSONParser.parse(bytes) }
    }

    @Test("valid multi-byte UTF-8 passes through unchanged")
    func acceptsUTF8() throws {
        let text = "\"\u{80}\u{7FF}\u{800}\u{FFFF}\u{10000}\u{10FFFF}\u{E000}\""
        #expect(try parse(text) == .string("\u{80}\u{7FF}\u{800}\u{FFFF}\u{10000}\u{10FFFF}\u{E000}"))
    }

    @Test("errors carry the offset and a reason")
    func errorDetails() {
        #expect(parseBytes(Array("[1,]".utf8)) == .failure(JSONParseError(offset: 3, reason: "trailing comma or missing value")))
        #expect(parseBytes(Array(#"{"a":1,"a":2}"#.utf8)) == .failure(JSONParseError(offset: 7, reason: "duplicate key")))
        #expect(parseBytes(Array("1 2".utf8)) == .failure(JSONParseError(offset: 2, reason: "unexpected data after the value")))
        #expect(parseBytes(Array("{\"a\":1,}".utf8)) == .failure(JSONParseError(offset: 7, reason: "trailing comma")))
    }

    @Test("duplicate keys are found in large objects too")
    func duplicateKeysInLargeObject() {
        var text = "{"
        for index in 0..<100 { text += "\"k\(index)\":\(index)," }
        #expect(throws: JSONParseError.self) { try parse(text + "\"k57\":0}") }
        #expect(throws: Never.self) { try parse(text + "\"k100\":0}") }
    }

    @Test("nesting is limited and 100k open brackets do not crash")
    func deepNesting() throws {
        let ok = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        _ = try parse(ok)
        let tooDeep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        #expect(throws: JSONParseError.self) { try parse(tooDeep) }
        let hostile = [UInt8](repeating: 0x5B, count: 100_000)
        #expect(throws: JSONParseError.self) { try JSONParser.parse(hostile) }
        let hostileObjects = String(repeating: "{\"a\":", count: 100_000)
        #expect(throws: JSONParseError.self) { try parse(hostileObjects) }
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        let value = try JSONParser.parse(Array(deep.utf8), maxDepth: 10_000)
        #expect(value.arrayValue?.count == 1)
    }

    @Test("big documents parse completely")
    func bigInput() throws {
        var writer = JSONWriter()
        writer.array { writer in
            for index in 0..<20_000 {
                writer.object { writer in
                    writer.key("id")
                    writer.int(index)
                    writer.key("name")
                    writer.string("location \(index) ü \"quoted\"\n")
                    writer.key("lat")
                    writer.double(Double(index) / 1000 - 10)
                }
            }
        }
        #expect(writer.bytes.count > 1_000_000)
        let value = try JSONParser.parse(writer.bytes)
        let elements = try #require(value.arrayValue)
        #expect(elements.count == 20_000)
        #expect(elements[19_999].objectValue?["name"] == .string("location 19999 ü \"quoted\"\n"))
        let latitude: Double = 12345.0 / 1000 - 10
        #expect(elements[12_345].objectValue?["lat"] == .number(latitude))
    }

    @Test("raw buffers and strings parse like arrays")
    func otherInputs() throws {
        let bytes = Array(#"{"a":[1]}"#.utf8)
        let fromRaw = try bytes.withUnsafeBytes { buffer in try JSONParser.parse(buffer) }
        #expect(fromRaw == (try JSONParser.parse(bytes)))
        #expect(try JSONParser.parse(#"{"a":[1]}"#) == fromRaw)
    }
}
