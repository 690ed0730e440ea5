/// RFC 3986 percent-encoding. Decoding lives here because a URL's Cloud Storage object name is
/// read through it (`StorageObjectReference`), a rule both ends apply; `FirebaseAdmin` adds the
/// encoding its requests to Google need.
public enum PercentEncoding {
    /// RFC 3986's unreserved characters (`A-Z a-z 0-9 - . _ ~`): the bytes encoding leaves as they
    /// are, so a text of them reads the same percent-decoded.
    public static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x2D, 0x2E, 0x5F, 0x7E: true
        default: false
        }
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
                guard index + 2 < input.count, let high = hexValue(input[index + 1]), let low = hexValue(input[index + 2])
                else { return nil }
                output.append(high << 4 | low)
                index += 3
            } else {
                output.append(byte)
                index += 1
            }
        }
        // `String(validating:as:)` needs iOS 18; a lossless decode is the same test on iOS 17.
        let text = String(decoding: output, as: UTF8.self)
        return text.utf8.elementsEqual(output) ? text : nil
    }

    /// The value of an ASCII hexadecimal digit (the standard library's rule; a byte above 0x7F is
    /// a Latin-1 scalar, never a digit).
    private static func hexValue(_ byte: UInt8) -> UInt8? {
        Character(Unicode.Scalar(byte)).hexDigitValue.map(UInt8.init)
    }
}
