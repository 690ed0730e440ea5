/// Strict base64url (RFC 4648 §5) without padding: the one codec of the server, for the segments
/// of JWTs (ID tokens, service-account assertions) and the text form of sync cursors.
public enum Base64URL {
    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    private static let decodeTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, symbol) in alphabet.enumerated() { table[Int(symbol)] = UInt8(index) }
        return table
    }()

    /// Encodes bytes without padding.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        let input = Array(bytes)
        var output: [UInt8] = []
        output.reserveCapacity((input.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= input.count {
            let chunk = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
            output.append(alphabet[Int(chunk >> 18)])
            output.append(alphabet[Int(chunk >> 12 & 0x3F)])
            output.append(alphabet[Int(chunk >> 6 & 0x3F)])
            output.append(alphabet[Int(chunk & 0x3F)])
            index += 3
        }
        let remaining = input.count - index
        if remaining == 1 {
            let chunk = UInt32(input[index]) << 16
            output.append(alphabet[Int(chunk >> 18)])
            output.append(alphabet[Int(chunk >> 12 & 0x3F)])
        } else if remaining == 2 {
            let chunk = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8
            output.append(alphabet[Int(chunk >> 18)])
            output.append(alphabet[Int(chunk >> 12 & 0x3F)])
            output.append(alphabet[Int(chunk >> 6 & 0x3F)])
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Encodes the UTF-8 of `text` without padding.
    public static func encode(_ text: String) -> String {
        encode(Array(text.utf8))
    }

    /// Decodes strictly: only the base64url alphabet, no padding, no whitespace, and unused
    /// trailing bits must be zero (one canonical spelling per byte string). Nil otherwise.
    public static func decode(_ text: some Collection<UInt8>) -> [UInt8]? {
        let input = Array(text)
        if input.count % 4 == 1 { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(input.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for symbol in input {
            let value = decodeTable[Int(symbol)]
            guard value != 0xFF else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        guard accumulator == 0 else { return nil }
        return output
    }

    /// Decodes a string strictly; see `decode(_:)` for bytes.
    public static func decode(_ text: String) -> [UInt8]? {
        decode(Array(text.utf8))
    }
}
