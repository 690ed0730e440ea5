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
}
