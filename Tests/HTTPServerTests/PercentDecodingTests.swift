import Testing

@testable import HTTPServer

@Suite("Percent-decoding: one decoder per semantics")
struct PercentDecodingTests {
    @Test("a query component turns + into a space and decodes escapes")
    func queryComponent() {
        #expect(PercentDecoding.decodeQueryComponent("a+b%20c%2Bd".utf8) == "a b c+d")
    }

    @Test("a path segment keeps + and decodes escapes")
    func pathSegment() {
        #expect(PercentDecoding.decodePathSegment("a+b%20c%2Bd".utf8) == "a+b c+d")
    }

    @Test("an invalid escape is kept literally and invalid UTF-8 becomes U+FFFD")
    func malformed() {
        #expect(PercentDecoding.decodePathSegment("%zz%4".utf8) == "%zz%4")
        #expect(PercentDecoding.decodeQueryComponent("%FF".utf8) == "\u{FFFD}")
    }

    @Test("every byte value decodes from its escape, hex digits in either case")
    func everyByte() {
        for byte in UInt8(0)...UInt8(255) {
            let high = Array("0123456789abcdef".utf8)[Int(byte >> 4)]
            let low = Array("0123456789ABCDEF".utf8)[Int(byte & 0x0F)]
            let decoded = PercentDecoding.decodePathSegment([UInt8(ascii: "%"), high, low])
            #expect(decoded == String(decoding: [byte], as: UTF8.self), "byte \(byte)")
        }
    }
}
