import FoundationEssentials
import LocifyRules

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
/// The domain keeps the decoded value; its text form (base64url of a fixed binary layout with a
/// checksum over the layout and the owner's user id) is `LocifyAPI`'s (`SyncCursor+Text.swift`).
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
}
