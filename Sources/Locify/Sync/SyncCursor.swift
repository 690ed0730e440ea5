import FoundationEssentials
import LocifyRules
import Primitives

/// Where a client stands in its user's change feed (openapi.yaml), opaque to the client.
///
/// Every write transaction of a user stamps the rows it touches with the next value of the user's
/// `change_seq`, under the user's row lock, so per user, commit order equals stamp order. A
/// cursor is a position in the total order (change_seq, kind, id): reading everything after it
/// can never skip a change, because a change committed later always carries a higher stamp.
///
/// Snapshot cursors page through the live records that existed at the snapshot's high-water
/// stamp (categories by id, then locations by id); the last snapshot page hands out an ordinary
/// delta cursor at that high-water stamp, so the delta continues exactly after the snapshot.
///
/// Encoding: base64url of a fixed binary layout with a checksum over the layout and the owner's
/// user id: garbage, truncation and another user's cursor are all refused (E001).
public struct SyncCursor: Sendable, Equatable {
    /// Which part of the feed the cursor is in.
    public enum Phase: UInt8, Sendable {
        /// Snapshot, still delivering categories (after `afterID`).
        case snapshotCategories = 1
        /// Snapshot, delivering locations (after `afterID`).
        case snapshotLocations = 2
        /// Delta feed after position (`seq`, `rank`, `afterID`).
        case delta = 3
    }

    /// Snapshot (categories or locations) or delta.
    public var phase: Phase
    /// Delta: the stamp of the last delivered change. Snapshot: the snapshot's high-water stamp.
    public var seq: Int64
    /// Delta: kind rank of the last delivered change at `seq` (0 category, 1 location), or 2 when
    /// everything at `seq` has been delivered.
    public var rank: UInt8
    /// The last delivered id (within `seq` and `rank` for deltas, within the table for snapshots).
    public var afterID: UUID
    /// Server time when this position was established; older than the retention: 410 E009.
    public var issuedAt: Timestamp

    /// A cursor at the given position.
    public init(phase: Phase, seq: Int64, rank: UInt8, afterID: UUID, issuedAt: Timestamp) {
        self.phase = phase
        self.seq = seq
        self.rank = rank
        self.afterID = afterID
        self.issuedAt = issuedAt
    }

    /// The smallest id: "nothing delivered yet at this position".
    public static let minID = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))

    /// A delta cursor after everything stamped up to and including `seq`.
    public static func after(seq: Int64, issuedAt: Timestamp) -> SyncCursor {
        SyncCursor(phase: .delta, seq: seq, rank: 2, afterID: minID, issuedAt: issuedAt)
    }

    /// Whether a tombstone purged with stamps up to `purgedThrough` may be one this cursor has
    /// not delivered yet. A delta position is past a stamp only when the stamp is lower, or equal
    /// with everything at it delivered (rank 2); a snapshot continues with a delta after its
    /// high-water stamp, so only later deletes matter to it.
    func mayHaveMissed(purgedThrough: Int64) -> Bool {
        switch phase {
        case .delta: return seq < purgedThrough || (seq == purgedThrough && rank < 2)
        case .snapshotCategories, .snapshotLocations: return seq < purgedThrough
        }
    }

    private static let version: UInt8 = 1
    private static let payloadLength = 1 + 1 + 8 + 1 + 16 + 8

    /// The opaque text handed to the client.
    public func encoded(for userID: String) -> String {
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
    public init(encoded text: String, userID: String) throws(LocifyError) {
        let invalid = LocifyError.invalid("since", "is not a cursor this server issued for this user")
        guard text.utf8.count <= 64, let bytes = Base64URL.decode(text), bytes.count == SyncCursor.payloadLength + 8 else { throw invalid }
        let payload = Array(bytes[0..<SyncCursor.payloadLength])
        guard SyncCursor.readUInt64(bytes, at: SyncCursor.payloadLength) == SyncCursor.checksum(payload, userID: userID),
            payload[0] == SyncCursor.version, let phase = Phase(rawValue: payload[1]), payload[10] <= 2
        else { throw invalid }
        let idBytes = Array(payload[11..<27])
        self.phase = phase
        self.seq = Int64(bitPattern: SyncCursor.readUInt64(payload, at: 2))
        self.rank = payload[10]
        self.afterID = idBytes.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
        self.issuedAt = Timestamp(milliseconds: Int64(bitPattern: SyncCursor.readUInt64(payload, at: 27)))
        guard seq >= 0 else { throw invalid }
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
