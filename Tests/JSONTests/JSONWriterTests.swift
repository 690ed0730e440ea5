import JSON
import Testing

private func text(_ writer: JSONWriter) -> String { String(decoding: writer.bytes, as: UTF8.self) }

@Suite("JSONWriter")
struct JSONWriterTests {
    @Test("inserts commas between members and elements")
    func commas() {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("a")
        writer.int(1)
        writer.key("b")
        writer.beginArray()
        writer.bool(true)
        writer.null()
        writer.beginObject()
        writer.endObject()
        writer.beginArray()
        writer.endArray()
        writer.string("x")
        writer.endArray()
        writer.key("c")
        writer.string(nil)
        writer.endObject()
        #expect(text(writer) == #"{"a":1,"b":[true,null,{},[],"x"],"c":null}"#)
    }

    @Test("closure forms and raw splices")
    func closuresAndRaw() {
        var writer = JSONWriter()
        writer.array { writer in
            writer.raw(Array(#"{"pre":"encoded"}"#.utf8))
            writer.object { writer in
                writer.key("k")
                writer.raw(Array("[1,2]".utf8))
            }
            writer.int64(-9_223_372_036_854_775_808)
        }
        #expect(text(writer) == #"[{"pre":"encoded"},{"k":[1,2]},-9223372036854775808]"#)
    }

    @Test("escapes quotes, backslashes and control characters; keeps other Unicode as UTF-8")
    func escaping() {
        var writer = JSONWriter()
        writer.string("\"\\/\n\r\t\u{08}\u{0C}\u{0}\u{1F}\u{7F}é😀\u{2028}")
        #expect(text(writer) == "\"\\\"\\\\/\\n\\r\\t\\b\\f\\u0000\\u001f\u{7F}é😀\u{2028}\"")
        var keyWriter = JSONWriter()
        keyWriter.object { writer in
            writer.key("a\"b")
            writer.int(0)
        }
        #expect(text(keyWriter) == #"{"a\"b":0}"#)
    }

    @Test("every control character is escaped and round-trips")
    func allControlCharacters() throws {
        let all = String(decoding: (0..<0x80).map { UInt8($0) }, as: UTF8.self)
        var writer = JSONWriter()
        writer.string(all)
        #expect(try JSONParser.parse(writer.bytes) == .string(all))
    }

    @Test("numbers: integers without fraction, shortest doubles, null for non-finite")
    func numbers() {
        let cases: [(Double, String)] = [
            (0, "0"), (-0.0, "-0"), (1, "1"), (-42, "-42"), (1.5, "1.5"), (0.1, "0.1"), (1e-7, "1e-07"),
            (1e20, "1e+20"), (1e15, "1000000000000000"), (9007199254740992, "9007199254740992"),
            (0.30000000000000004, "0.30000000000000004"), (-122.4194155, "-122.4194155"),
            (1.7976931348623157e308, "1.7976931348623157e+308"), (.leastNonzeroMagnitude, "5e-324"),
            (.infinity, "null"), (-.infinity, "null"), (.nan, "null"),
        ]
        for (number, expected) in cases {
            var writer = JSONWriter()
            writer.double(number)
            #expect(text(writer) == expected, "\(number)")
        }
        var ints = JSONWriter()
        ints.array { writer in
            writer.int(0)
            writer.int(Int.max)
            writer.int(-7)
        }
        #expect(text(ints) == "[0,9223372036854775807,-7]")
    }

    @Test("doubles round-trip through the parser bit for bit")
    func doubleRoundTrip() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let bits = UInt64.random(in: 0...UInt64.max, using: &generator)
            let number = Double(bitPattern: bits)
            guard number.isFinite else { continue }
            var writer = JSONWriter()
            writer.double(number)
            let parsed = try JSONParser.parse(writer.bytes)
            #expect(parsed.numberValue?.bitPattern == number.bitPattern, "\(number)")
        }
    }

    @Test("values round-trip through write and parse")
    func valueRoundTrip() throws {
        let value: JSONValue = [
            "id": "0b8f2c1e-2a3b-4c5d-8e9f-0a1b2c3d4e5f", "name": "Café \"Zur Post\"\n", "count": 3,
            "lat": 47.3769, "tags": ["a", nil, true, [[]], [:]], "nested": ["deep": ["deeper": [1.25, -0.5]]],
        ]
        let bytes = JSONWriter.encode(value)
        #expect(try JSONParser.parse(bytes) == value)
        #expect(
            String(decoding: bytes, as: UTF8.self)
                == #"{"id":"0b8f2c1e-2a3b-4c5d-8e9f-0a1b2c3d4e5f","name":"Café \"Zur Post\"\n","count":3,"lat":47.3769,"tags":["a",null,true,[[]],{}],"nested":{"deep":{"deeper":[1.25,-0.5]}}}"#
        )
    }
}
