import LocifyRules
import Primitives

extension PercentEncoding {
    /// Encodes everything but the unreserved characters (`A-Z a-z 0-9 - . _ ~`), so the result is
    /// safe as ONE path segment or one query value (`/` becomes `%2F`, space `%20`).
    public static func encodeComponent(_ text: String) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if isUnreserved(byte) {
                output.append(byte)
            } else {
                output.append(0x25)
                output.append(HexDigit.uppercase(byte >> 4))
                output.append(HexDigit.uppercase(byte))
            }
        }
        return String(decoding: output, as: UTF8.self)
    }
}
