import FoundationEssentials
import Primitives

/// The API's UUID text form: input in any letter case, output always lower case. A wire concern,
/// so it lives here: the domain names Storage folders with `UUID.storageSpellings` (the same
/// text, through the same `HexDigit.writeUUID`), and `LocifyClient` reads and writes UUIDs through `Codable`.
extension UUID {
    /// Parses the 36-character `8-4-4-4-12` hexadecimal form in any letter case; nil otherwise.
    /// Hand-written on purpose: Foundation's `UUID(uuidString:)` on Linux also takes a space, a
    /// sign or a hyphen inside a hex pair (UUIDTests "refuses other shapes" shows it).
    package init?(apiString text: String) {
        let utf8 = text.utf8
        guard utf8.count == 36 else { return nil }
        var bytes = [UInt8](repeating: 0, count: 16)
        var byteIndex = 0
        var high: UInt8? = nil
        for (position, c) in utf8.enumerated() {
            if position == 8 || position == 13 || position == 18 || position == 23 {
                guard c == UInt8(ascii: "-") else { return nil }
                continue
            }
            guard let nibble = HexDigit.value(c) else { return nil }
            if let h = high {
                bytes[byteIndex] = h << 4 | nibble
                byteIndex += 1
                high = nil
            } else {
                high = nibble
            }
        }
        self = bytes.withUnsafeBytes { raw in
            UUID(uuid: raw.loadUnaligned(as: uuid_t.self))
        }
    }

    /// The canonical lower-case text form.
    package var lowercasedString: String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(36)
        appendLowercased(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the canonical lower-case text form to `bytes`, in one append (it runs for every id
    /// of every response): the 36 bytes are written into a stack buffer first.
    package func appendLowercased(to bytes: inout [UInt8]) {
        withUnsafeBytes(of: uuid) { raw in
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 36) { text in
                HexDigit.writeUUID(raw, uppercase: false, into: text)
                bytes.append(contentsOf: UnsafeBufferPointer(text))
            }
        }
    }
}
