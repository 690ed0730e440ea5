import Primitives
import Testing

@Suite("Hex digits: one decoder")
struct HexDigitTests {
    @Test("decodes 0-9, a-f and A-F and refuses every other byte")
    func decodesHexDigits() {
        let digits = Array("0123456789abcdef".utf8)
        for byte in UInt8(0)...UInt8(255) {
            let expected = digits.firstIndex(of: byte | (byte >= 0x41 && byte <= 0x46 ? 0x20 : 0)).map(UInt8.init)
            #expect(HexDigit.value(byte) == expected)
        }
    }
}
