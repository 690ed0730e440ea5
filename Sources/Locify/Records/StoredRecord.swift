import FoundationEssentials
import LocifyRules
import Postgres
import Primitives

/// A row of one of the synced tables (categories, locations) as the store reads it: what the
/// code shared by both tables needs of `Category` and `Location`.
protocol StoredRecord: Sendable {
    /// The fields last write wins merges one by one (issue 36).
    associatedtype Field: RecordField
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
    /// Each field's stamp and the record's own tombstone: what a write is decided against.
    var fieldClock: FieldLastWriteWins<Field>.Clock { get }
}

extension StoredRecord {
    /// The record, or its tombstone when deleted.
    var state: RecordState {
        if let deletedAt { return .tombstone(Self.kind, id: id, deletedAt: deletedAt) }
        return liveState
    }
}

/// A validated whole-record write (create, upsert or replace) of a synced record: what the shared
/// last-write-wins code reads of `CategoryDraft` and `LocationDraft`.
protocol RecordDraft: Sendable {
    /// The record the draft writes.
    associatedtype Record: StoredRecord
    /// The same write as a patch that carries every field.
    associatedtype Patch: RecordPatch where Patch.Record == Record

    /// The client-chosen id.
    var id: UUID { get }
    /// Sent `created_at` (create only), not yet clamped.
    var createdAt: Timestamp? { get }
    /// Sent `updated_at`, not yet clamped.
    var updatedAt: Timestamp? { get }
    /// The write as a patch of every field.
    var patch: Patch { get }
}

/// A validated write of some fields of a synced record (a `PATCH`, or a whole draft's `patch`):
/// what the shared last-write-wins code reads of `CategoryPatch` and `LocationPatch`.
protocol RecordPatch: Sendable {
    /// The record the patch writes.
    associatedtype Record: StoredRecord

    /// The client-chosen id.
    var id: UUID { get }
    /// Sent `updated_at`, not yet clamped.
    var updatedAt: Timestamp? { get }
    /// The fields it carries (at least one).
    var fields: Set<Record.Field> { get }
    /// Whether its (normalised) value of `field`, which it carries, equals the stored one.
    func hasSameValue(_ field: Record.Field, as stored: Record) -> Bool
}
