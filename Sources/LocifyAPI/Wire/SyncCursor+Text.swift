import FoundationEssentials
import Locify
import LocifyRules
import Primitives

/// The sync cursor's text form (openapi.yaml: opaque to the client): base64url of a fixed binary
/// layout (version, phase, stamp, rank, id, issue time) with a checksum over the layout and the
/// owner's user id, so garbage, truncation and another user's cursor are all refused (E001). The
/// domain works with the decoded `SyncCursor` only.
extension SyncCursor {
    private static let version: UInt8 = 1
    private static let payloadLength = 1 + 1 + 8 + 1 + 16 + 8

    /// The opaque text handed to the client.
    package func encoded(for userID: String) -> String {
        var bytes: [UInt8] = [SyncCursor.version, phase.rawValue]
        bytes.reserveCapacity(SyncCursor.payloadLength + 8)
        SyncCursor.append(UInt64(bitPattern: seq), to: &bytes)
        bytes.append(rank)
        withUnsafeBytes(of: afterID.uuid) { bytes.append(contentsOf: $0) }
        SyncCursor.append(UInt64(bitPattern: issuedAt.milliseconds), to: &bytes)
        SyncCursor.append(SyncCursor.checksum(bytes, userID: userID), to: &bytes)
        return Base64URL.encode(bytes)
    }

    /// Decodes a cursor handed out to `userID`; anything else is E001 on `since`.
    package init(encoded text: String, userID: String) throws(RequestDecodingError) {
        let invalid = RequestDecodingError.invalid("since", "is not a cursor this server issued for this user")
        guard text.utf8.count <= 64, let bytes = Base64URL.decode(text), bytes.count == SyncCursor.payloadLength + 8 else { throw invalid }
        let payload = Array(bytes[0..<SyncCursor.payloadLength])
        guard SyncCursor.readUInt64(bytes, at: SyncCursor.payloadLength) == SyncCursor.checksum(payload, userID: userID),
            payload[0] == SyncCursor.version, let phase = Phase(rawValue: payload[1]), payload[10] <= 2
        else { throw invalid }
        let idBytes = Array(payload[11..<27])
        let seq = Int64(bitPattern: SyncCursor.readUInt64(payload, at: 2))
        guard seq >= 0 else { throw invalid }
        self.init(
            phase: phase, seq: seq, rank: payload[10],
            afterID: idBytes.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) },
            issuedAt: Timestamp(milliseconds: Int64(bitPattern: SyncCursor.readUInt64(payload, at: 27))))
    }

    private static func append(_ value: UInt64, to bytes: inout [UInt8]) {
        for shift in stride(from: 56, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }

    private static func readUInt64(_ bytes: [UInt8], at offset: Int) -> UInt64 {
        var value: UInt64 = 0
        for index in offset..<(offset + 8) {
            value = value << 8 | UInt64(bytes[index])
        }
        return value
    }

    /// FNV-1a (64 bit) over the user id, a separator and the payload: detects corruption and
    /// cursors of other users (ids are not secret, so a keyed MAC would buy nothing more).
    private static func checksum(_ payload: [UInt8], userID: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in Array(userID.utf8) + [0] + payload {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
        }
        return hash
    }
}
