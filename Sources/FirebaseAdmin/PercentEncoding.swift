import Primitives

/// RFC 3986 percent-encoding and decoding for URL path segments and query values.
public enum PercentEncoding {
    /// Encodes everything but the unreserved characters (`A-Z a-z 0-9 - . _ ~`), so the result is
    /// safe as ONE path segment or one query value (`/` becomes `%2F`, space `%20`).
    public static func encodeComponent(_ text: String) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x2D, 0x2E, 0x5F, 0x7E:
                output.append(byte)
            default:
                output.append(0x25)
                output.append(HexDigit.uppercase(byte >> 4))
                output.append(HexDigit.uppercase(byte))
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Decodes `%XX` escapes once. Nil when an escape is malformed or the result is not UTF-8.
    /// `+` is left as is (it only means space in form bodies).
    public static func decode(_ text: some StringProtocol) -> String? {
        let input = Array(text.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(input.count)
        var index = 0
        while index < input.count {
            let byte = input[index]
            if byte == 0x25 {
                guard index + 2 < input.count, let high = HexDigit.value(input[index + 1]), let low = HexDigit.value(input[index + 2])
                else { return nil }
                output.append(high << 4 | low)
                index += 3
            } else {
                output.append(byte)
                index += 1
            }
        }
        return String(validating: output, as: UTF8.self)
    }
}
