/// The one hexadecimal-digit codec of the server: percent escapes (HTTP paths and queries,
/// Storage object names), chunk sizes, JSON `\u` escapes and UUID text all read and write digits
/// with it.
public enum HexDigit {
    /// The value of an ASCII hexadecimal digit in either letter case, or nil.
    @inlinable
    public static func value(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte &- UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte &- UInt8(ascii: "a") &+ 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte &- UInt8(ascii: "A") &+ 10
        default: nil
        }
    }

    /// The lower-case ASCII digit of a value 0-15 (only the low four bits are used).
    @inlinable
    public static func lowercase(_ value: UInt8) -> UInt8 {
        let nibble = value & 0x0F
        return nibble < 10 ? UInt8(ascii: "0") &+ nibble : UInt8(ascii: "a") &+ (nibble &- 10)
    }

    /// The upper-case ASCII digit of a value 0-15 (only the low four bits are used).
    @inlinable
    public static func uppercase(_ value: UInt8) -> UInt8 {
        let nibble = value & 0x0F
        return nibble < 10 ? UInt8(ascii: "0") &+ nibble : UInt8(ascii: "A") &+ (nibble &- 10)
    }
}
