import Primitives
import Testing

@Suite("Base64URL")
struct Base64URLTests {
    @Test("encodes without padding and decodes back", arguments: [0, 1, 2, 3, 4, 5, 31, 32, 33, 255, 256])
    func roundTrip(length: Int) throws {
        let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        let encoded = Base64URL.encode(bytes)
        #expect(!encoded.contains("="))
        #expect(!encoded.contains("+") && !encoded.contains("/"))
        #expect(Base64URL.decode(encoded) == bytes)
    }

    @Test("known vectors")
    func vectors() {
        #expect(Base64URL.encode("f") == "Zg")
        #expect(Base64URL.encode("fo") == "Zm8")
        #expect(Base64URL.encode("foo") == "Zm9v")
        #expect(Base64URL.encode([0xFB, 0xFF]) == "-_8")
        #expect(Base64URL.decode("-_8") == [0xFB, 0xFF])
    }

    @Test("decoding is strict", arguments: ["Zg==", "Zg=", "Zm9v=", "Z", "Zm9vZ", "Zm 9v", "Zm9v\n", "+/8", "Zh", "Zm9", "Zm-"])
    func strict(text: String) {
        // "Zh", "Zm9" and "Zm-" carry non-zero unused bits: not the canonical spelling.
        #expect(Base64URL.decode(text) == nil, "\(text)")
    }
}
