import Primitives

/// Percent-decoding of URI components (RFC 3986 2.1) for path parameters and query items.
/// Two semantics, each with its own name: query items (`+` is a space) and path segments (`+` is
/// a plus).
enum PercentDecoding {
    /// Decodes a query-string name or value (`application/x-www-form-urlencoded`): `%XX` escapes,
    /// and `+` as a space.
    static func decodeQueryComponent<Bytes: Collection>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        decode(bytes, plusAsSpace: true)
    }

    /// Decodes a path segment (a path parameter): `%XX` escapes only; `+` stays a plus.
    static func decodePathSegment<Bytes: Collection>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        decode(bytes, plusAsSpace: false)
    }

    /// Decodes `%XX` escapes (and `+` as a space when `plusAsSpace`). An invalid escape is kept
    /// literally; bytes that are not valid UTF-8 after decoding become U+FFFD.
    private static func decode<Bytes: Collection>(_ bytes: Bytes, plusAsSpace: Bool) -> String
    where Bytes.Element == UInt8 {
        var needsWork = false
        for byte in bytes where byte == UInt8(ascii: "%") || (plusAsSpace && byte == UInt8(ascii: "+")) {
            needsWork = true
            break
        }
        guard needsWork else { return String(decoding: bytes, as: UTF8.self) }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index != bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                let first = bytes.index(after: index)
                if first != bytes.endIndex {
                    let second = bytes.index(after: first)
                    if second != bytes.endIndex, let high = HexDigit.value(bytes[first]),
                        let low = HexDigit.value(bytes[second])
                    {
                        output.append(high << 4 | low)
                        index = bytes.index(after: second)
                        continue
                    }
                }
                output.append(byte)
            } else if plusAsSpace && byte == UInt8(ascii: "+") {
                output.append(UInt8(ascii: " "))
            } else {
                output.append(byte)
            }
            index = bytes.index(after: index)
        }
        return String(decoding: output, as: UTF8.self)
    }
}
