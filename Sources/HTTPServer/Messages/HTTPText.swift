/// Byte classes and small text helpers of the HTTP grammar (RFC 9110 5.6), shared by the parser,
/// the headers and the serializer. Work on bytes: no per-byte String work.
public enum HTTPText {
    static let cr: UInt8 = 0x0D
    static let lf: UInt8 = 0x0A
    static let space: UInt8 = 0x20
    static let tab: UInt8 = 0x09
    static let colon: UInt8 = 0x3A

    /// `tchar` of RFC 9110 5.6.2, indexed by byte.
    static let tokenTable: [Bool] = (0..<256).map { value in
        let byte = UInt8(value)
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "A")...UInt8(ascii: "Z"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// True for a `tchar` (RFC 9110 5.6.2).
    @inline(__always)
    static func isTokenByte(_ byte: UInt8) -> Bool {
        tokenTable.withUnsafeBufferPointer { $0[Int(byte)] }
    }

    /// True for bytes allowed inside a field value: VCHAR, obs-text, SP and HTAB (RFC 9110 5.5).
    /// Everything else (NUL, CR, LF, other controls, DEL) is refused. Not `ControlCharacter`'s
    /// rule on purpose: this one is the HTTP grammar's, on bytes, and allows HTAB and every byte
    /// from 0x80 (obs-text, e.g. UTF-8), where the text rule refuses HTAB and the C1 scalars.
    @inline(__always)
    static func isFieldValueByte(_ byte: UInt8) -> Bool {
        (byte >= 0x20 && byte != 0x7F) || byte == tab
    }

    /// True for SP or HTAB (`OWS`/`BWS`, RFC 9110 5.6.3).
    @inline(__always)
    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == space || byte == tab
    }

    /// ASCII lower-case of a byte (other bytes unchanged); also for responders comparing
    /// case-insensitive header values (schemes, media types) on bytes.
    @inlinable
    public static func lowercased(_ byte: UInt8) -> UInt8 {
        (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) ? byte | 0x20 : byte
    }

    /// Compares two strings ignoring ASCII case, as header names and tokens are compared.
    static func equalsIgnoringASCIICase<A: StringProtocol, B: StringProtocol>(_ lhs: A, _ rhs: B) -> Bool {
        let left = lhs.utf8
        let right = rhs.utf8
        guard left.count == right.count else { return false }
        for (a, b) in zip(left, right) where lowercased(a) != lowercased(b) {
            return false
        }
        return true
    }

    /// Compares bytes with a lower-case ASCII literal, ignoring the case of `bytes`.
    @inline(__always)
    static func bytes(_ bytes: UnsafeRawBufferPointer, equalLowercased literal: StaticString) -> Bool {
        guard bytes.count == literal.utf8CodeUnitCount else { return false }
        let expected = UnsafeRawBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
        for index in 0..<bytes.count where lowercased(bytes[index]) != expected[index] {
            return false
        }
        return true
    }

    /// Removes leading and trailing SP/HTAB.
    static func trimmingOptionalWhitespace(_ text: Substring) -> Substring {
        let utf8 = text.utf8
        var start = utf8.startIndex
        var end = utf8.endIndex
        while start < end, isWhitespace(utf8[start]) { start = utf8.index(after: start) }
        while end > start, isWhitespace(utf8[utf8.index(before: end)]) { end = utf8.index(before: end) }
        // SP and HTAB are single-scalar characters, so these byte indices are scalar boundaries.
        return text[start..<end]
    }
}
