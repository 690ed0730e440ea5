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

    /// Writes the 36-byte `8-4-4-4-12` text of the 16 bytes of a UUID into `text`, in lower or
    /// upper case: the server's one UUID formatter (Foundation's `uuidString` formats through
    /// `sprintf`, and a big cascade names 40,000 Storage folders).
    @inlinable
    public static func writeUUID(_ uuid: UnsafeRawBufferPointer, uppercase: Bool, into text: UnsafeMutableBufferPointer<UInt8>) {
        precondition(uuid.count == 16 && text.count == 36, "a UUID is 16 bytes and 36 characters")
        var offset = 0
        for index in 0..<16 {
            if index == 4 || index == 6 || index == 8 || index == 10 {
                text[offset] = UInt8(ascii: "-")
                offset += 1
            }
            text[offset] = uppercase ? Self.uppercase(uuid[index] >> 4) : lowercase(uuid[index] >> 4)
            text[offset + 1] = uppercase ? Self.uppercase(uuid[index]) : lowercase(uuid[index])
            offset += 2
        }
    }
}
