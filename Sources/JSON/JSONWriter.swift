import Primitives

/// A streaming JSON encoder that appends UTF-8 bytes, inserting commas itself.
///
/// Call `beginObject`/`key`/value/`endObject` (or the closure forms) in document order; the
/// writer tracks when a comma is needed. Every `String` is escaped into valid JSON, integers are
/// written without a fraction, doubles in their shortest round-trip form, and non-finite doubles
/// as `null` (JSON cannot represent them).
public struct JSONWriter: Sendable {
    /// The encoded document so far.
    public var bytes: [UInt8]
    private var needsComma = false

    /// A writer with an empty buffer; `reservingCapacity` bytes are pre-allocated.
    public init(reservingCapacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(reservingCapacity)
    }

    /// Encodes one value into a fresh byte array.
    public static func encode(_ value: JSONValue) -> [UInt8] {
        var writer = JSONWriter()
        writer.write(value)
        return writer.bytes
    }

    private mutating func separate() {
        if needsComma { bytes.append(0x2C) }
    }

    // MARK: Containers

    /// Writes `{`.
    public mutating func beginObject() {
        separate()
        bytes.append(0x7B)
        needsComma = false
    }

    /// Writes `}`.
    public mutating func endObject() {
        bytes.append(0x7D)
        needsComma = true
    }

    /// Writes `[`.
    public mutating func beginArray() {
        separate()
        bytes.append(0x5B)
        needsComma = false
    }

    /// Writes `]`.
    public mutating func endArray() {
        bytes.append(0x5D)
        needsComma = true
    }

    /// Writes an object whose members `body` writes.
    public mutating func object(_ body: (inout JSONWriter) -> Void) {
        beginObject()
        body(&self)
        endObject()
    }

    /// Writes an array whose elements `body` writes.
    public mutating func array(_ body: (inout JSONWriter) -> Void) {
        beginArray()
        body(&self)
        endArray()
    }

    /// Writes a member name and the colon; the next call writes its value.
    public mutating func key(_ name: String) {
        separate()
        appendQuoted(name)
        bytes.append(0x3A)
        needsComma = false
    }

    // MARK: Scalars

    /// Writes a string value, escaped.
    public mutating func string(_ value: String) {
        separate()
        appendQuoted(value)
        needsComma = true
    }

    /// Writes a string value, or `null` when nil.
    public mutating func string(_ value: String?) {
        if let value { string(value) } else { null() }
    }

    /// Writes an integer.
    public mutating func int(_ value: Int) {
        int64(Int64(value))
    }

    /// Writes an integer.
    public mutating func int64(_ value: Int64) {
        separate()
        appendInteger(value)
        needsComma = true
    }

    /// Writes a double in shortest round-trip form; integral values have no `.0`; `inf`/`nan` become `null`.
    public mutating func double(_ value: Double) {
        separate()
        appendDouble(value)
        needsComma = true
    }

    /// Writes `true` or `false`.
    public mutating func bool(_ value: Bool) {
        separate()
        if value {
            bytes.append(contentsOf: [0x74, 0x72, 0x75, 0x65])
        } else {
            bytes.append(contentsOf: [0x66, 0x61, 0x6C, 0x73, 0x65])
        }
        needsComma = true
    }

    /// Writes `null`.
    public mutating func null() {
        separate()
        bytes.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])
        needsComma = true
    }

    /// Writes a string value whose characters `append` adds to the buffer as they are, without
    /// escaping: only for text known to need none (UUIDs, timestamps), to skip a temporary String.
    public mutating func unescapedString(_ append: (inout [UInt8]) -> Void) {
        separate()
        bytes.append(0x22)
        append(&bytes)
        bytes.append(0x22)
        needsComma = true
    }

    /// Splices pre-encoded JSON as one value. The caller guarantees it is a valid JSON value.
    public mutating func raw<Bytes: Sequence>(_ encoded: Bytes) where Bytes.Element == UInt8 {
        separate()
        bytes.append(contentsOf: encoded)
        needsComma = true
    }

    /// Writes a parsed value (members in their stored order).
    public mutating func write(_ value: JSONValue) {
        switch value {
        case .null: null()
        case .bool(let flag): bool(flag)
        case .number(let number): double(number)
        case .string(let text): string(text)
        case .array(let elements):
            beginArray()
            for element in elements { write(element) }
            endArray()
        case .object(let members):
            beginObject()
            for member in members {
                key(member.key)
                write(member.value)
            }
            endObject()
        }
    }

    // MARK: Encoding helpers

    private mutating func appendInteger(_ value: Int64) {
        if value == 0 {
            bytes.append(0x30)
            return
        }
        var magnitude = value.magnitude
        if value < 0 { bytes.append(0x2D) }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var count = 0
            while magnitude > 0 {
                digits[count] = UInt8(truncatingIfNeeded: magnitude % 10) + 0x30
                magnitude /= 10
                count += 1
            }
            while count > 0 {
                count -= 1
                bytes.append(digits[count])
            }
        }
    }

    private mutating func appendDouble(_ value: Double) {
        guard value.isFinite else {
            bytes.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])
            return
        }
        if value == 0 {
            if value.sign == .minus { bytes.append(0x2D) }
            bytes.append(0x30)
            return
        }
        // Integral values below 2^53 are exact integers: print them without a fraction.
        if value.rounded(.towardZero) == value, value.magnitude < 9_007_199_254_740_992 {
            appendInteger(Int64(value))
            return
        }
        // The standard library prints the shortest representation that round-trips.
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        bytes.append(contentsOf: text.utf8)
    }

    private mutating func appendQuoted(_ text: String) {
        bytes.append(0x22)
        var text = text
        text.withUTF8 { utf8 in
            var runStart = 0
            var index = 0
            while index < utf8.count {
                let byte = utf8[index]
                if byte >= 0x20, byte != 0x22, byte != 0x5C {
                    index += 1
                    continue
                }
                if runStart < index {
                    bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
                }
                switch byte {
                case 0x22: bytes.append(contentsOf: [0x5C, 0x22])
                case 0x5C: bytes.append(contentsOf: [0x5C, 0x5C])
                case 0x0A: bytes.append(contentsOf: [0x5C, 0x6E])
                case 0x0D: bytes.append(contentsOf: [0x5C, 0x72])
                case 0x09: bytes.append(contentsOf: [0x5C, 0x74])
                case 0x08: bytes.append(contentsOf: [0x5C, 0x62])
                case 0x0C: bytes.append(contentsOf: [0x5C, 0x66])
                default:
                    bytes.append(contentsOf: [0x5C, 0x75, 0x30, 0x30])
                    bytes.append(HexDigit.lowercase(byte >> 4))
                    bytes.append(HexDigit.lowercase(byte))
                }
                index += 1
                runStart = index
            }
            if runStart < utf8.count {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<utf8.count]))
            }
        }
        bytes.append(0x22)
    }
}
