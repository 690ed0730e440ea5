import FoundationEssentials
import LocifyRules
import Postgres
import Primitives

/// A row of one of the synced tables (categories, locations) as the store reads it: what the
/// code shared by both tables needs of `Category` and `Location`.
protocol StoredRecord: Sendable {
    /// The kind of record (the tombstone's `type`, the noun of E007).
    static var kind: RecordKind { get }
    /// The record's columns of its table under `alias`, and their decoding: every statement that
    /// returns the record selects these.
    static func columns(_ alias: String) -> ColumnSet<Self>

    /// The client-chosen id.
    var id: UUID { get }
    /// The last write's time.
    var updatedAt: Timestamp { get }
    /// When it was deleted; nil for a live record.
    var deletedAt: Timestamp? { get }
    /// The record as a live `RecordState` (`state` gives the tombstone instead when deleted).
    var liveState: RecordState { get }
    /// The last-write-wins clock of the record's own last write.
    var clock: LastWriteWins.Stored { get }
}

extension StoredRecord {
    /// The record, or its tombstone when deleted.
    var state: RecordState {
        if let deletedAt { return .tombstone(Self.kind, id: id, deletedAt: deletedAt) }
        return liveState
    }

    /// The last-write-wins clock of a record whose state is its own last write.
    var clock: LastWriteWins.Stored { .init(updatedAt: updatedAt, isDeleted: deletedAt != nil) }
}

/// A validated write of a synced record: what the shared last-write-wins code reads of
/// `CategoryDraft` and `LocationDraft`.
protocol RecordDraft: Sendable {
    /// The record the draft writes.
    associatedtype Record: StoredRecord

    /// The client-chosen id.
    var id: UUID { get }
    /// Sent `created_at` (create only), not yet clamped.
    var createdAt: Timestamp? { get }
    /// Sent `updated_at`, not yet clamped.
    var updatedAt: Timestamp? { get }
    /// Whether this write carries the same editable content as `stored` (idempotent replay test).
    func hasSameContent(as stored: Record) -> Bool
}
