import Primitives
import Testing

@Suite("Hex digits: one codec")
struct HexDigitTests {
    @Test("decodes 0-9, a-f and A-F and refuses every other byte")
    func decodesHexDigits() {
        let digits = Array("0123456789abcdef".utf8)
        for byte in UInt8(0)...UInt8(255) {
            let expected = digits.firstIndex(of: byte | (byte >= 0x41 && byte <= 0x46 ? 0x20 : 0)).map(UInt8.init)
            #expect(HexDigit.value(byte) == expected)
        }
    }

    @Test("writes the digit of the low four bits in either case, and reading it back gives the value")
    func encodesHexDigits() {
        for value in UInt8(0)...UInt8(255) {
            let lower = HexDigit.lowercase(value)
            let upper = HexDigit.uppercase(value)
            #expect(lower == Array("0123456789abcdef".utf8)[Int(value & 0x0F)])
            #expect(upper == Array("0123456789ABCDEF".utf8)[Int(value & 0x0F)])
            #expect(HexDigit.value(lower) == value & 0x0F && HexDigit.value(upper) == value & 0x0F)
        }
    }

    @Test("writes a UUID's 16 bytes as 8-4-4-4-12 digits in the case asked for")
    func writesUUIDText() {
        let bytes: [UInt8] = [0x00, 0x1f, 0x2e, 0x3d, 0x4c, 0x5b, 0x6a, 0x79, 0x88, 0x97, 0xa6, 0xb5, 0xc4, 0xd3, 0xe2, 0xf1]
        func text(uppercase: Bool) -> String {
            bytes.withUnsafeBytes { raw in
                String(unsafeUninitializedCapacity: 36) { text in
                    HexDigit.writeUUID(raw, uppercase: uppercase, into: text)
                    return 36
                }
            }
        }
        #expect(text(uppercase: false) == "001f2e3d-4c5b-6a79-8897-a6b5c4d3e2f1")
        #expect(text(uppercase: true) == "001F2E3D-4C5B-6A79-8897-A6B5C4D3E2F1")
    }
}
