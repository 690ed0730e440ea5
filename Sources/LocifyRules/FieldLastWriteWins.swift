/// Last write wins field by field (issue 36; openapi.yaml, "Writes in any order";
/// docs/ARCHITECTURE.md, "Field-level last write wins"), as one pure function that the server and
/// `LocifyClient` both decide every write of a record with.
///
/// Each field keeps the stamp of the write that set it; a write sets each field it carries whose
/// stamp is older than the write's, so two devices that edit different fields both keep their
/// edits. A tombstone hides the record while no field is newer than it. The state of a record is
/// thus a function of the set of writes it was sent, whatever their arrival order (but for two
/// different values of one field at the same millisecond: the first to arrive stays). A write
/// that carries every field (create, replace) is decided exactly as `LastWriteWins` decides it.
public enum FieldLastWriteWins<Field: RecordField> {
    /// A stored record's clock: each field's stamp, in `Field` order (the server's fixed-order
    /// stamps column), and the tombstone's time while the record is deleted.
    public struct Clock: Sendable, Hashable {
        /// The stamp of the write that set each field, indexed by `Field.rawValue`.
        public private(set) var stamps: [Timestamp]
        /// The newest delete's time while it hides the record (never older than a field's stamp);
        /// nil while the record is live. A delete that a newer field outlives is forgotten: it
        /// can never hide the record again.
        public private(set) var deletedAt: Timestamp?

        /// A record whose fields were all set by one write at `at` (a whole-record write; the
        /// migration's clock of an existing row), deleted at `deletedAt` when that is not older.
        public init(writtenWhole at: Timestamp, deletedAt: Timestamp? = nil) {
            stamps = Array(repeating: at, count: Field.allCases.count)
            self.deletedAt = deletedAt
            forgetOutlivedDelete()
        }

        /// The clock of stored stamps; nil unless there is exactly one per field. A `deletedAt`
        /// older than the newest stamp is dropped (the record is live).
        public init?(stamps: [Timestamp], deletedAt: Timestamp?) {
            guard stamps.count == Field.allCases.count else { return nil }
            self.stamps = stamps
            self.deletedAt = deletedAt
            forgetOutlivedDelete()
        }

        /// The clock of the server's stamps column (milliseconds since the epoch, in `Field` order).
        public init?(milliseconds: [Int64], deletedAt: Timestamp?) {
            self.init(stamps: milliseconds.map(Timestamp.init(milliseconds:)), deletedAt: deletedAt)
        }

        /// The stamps as the server stores them: milliseconds since the epoch, in `Field` order.
        public var milliseconds: [Int64] { stamps.map(\.milliseconds) }

        /// The stamp of the write that set `field`.
        public subscript(field: Field) -> Timestamp { stamps[field.rawValue] }

        /// The newest field's stamp: the live record's `updated_at`.
        public var newestField: Timestamp { stamps.reduce(Timestamp(milliseconds: .min), max) }

        /// The record's `updated_at`: its tombstone's time while deleted, else its newest field's.
        public var updatedAt: Timestamp { deletedAt ?? newestField }

        /// Whether a delete hides the record.
        public var isDeleted: Bool { deletedAt != nil }

        /// Sets `field`'s stamp; the caller stores the write's value with it.
        mutating func stamp(_ field: Field, at: Timestamp) {
            stamps[field.rawValue] = at
            forgetOutlivedDelete()
        }

        /// Moves the tombstone to `at` when newer (a delete wins a tie with a field).
        mutating func delete(at: Timestamp) {
            deletedAt = max(deletedAt ?? at, at)
            forgetOutlivedDelete()
        }

        private mutating func forgetOutlivedDelete() {
            if let deletedAt, deletedAt < newestField { self.deletedAt = nil }
        }
    }

    /// What the caller wants to do.
    public enum Intent: Sendable, Hashable {
        /// POST and push `create`: every field; inserts when the id is new, else a whole write.
        case create
        /// PUT and push `update`: every field; not found when the id was never created.
        case replace
        /// PATCH and push `patch`: the fields it carries; not found when the id was never created.
        case patch(Set<Field>)
        /// DELETE and push `delete`: a tombstone at the write's time.
        case delete

        /// The fields whose values the write carries.
        public var carriedFields: Set<Field> {
            switch self {
            case .create, .replace: Set(Field.allCases)
            case .patch(let fields): fields
            case .delete: []
            }
        }
    }

    /// The verdict on one write: what to answer, and what to store.
    public struct Decision: Sendable, Hashable {
        /// What the API answers.
        public enum Outcome: Sendable, Hashable {
            /// No record yet: every field is stored at `at` (201).
            case inserted
            /// The write set at least one field and the record is live after it (200, the merged
            /// record); a tombstone comes back with each field at its newest value.
            case updated
            /// The write sets nothing, but a field it carries already holds its value at its time
            /// and none holds another value at that time: a replay of a write that arrived before
            /// (200, the stored record unchanged), even where newer writes have since set some of
            /// its fields. For a whole write: same time, same content.
            case replayed
            /// The record is a tombstone at `clock.deletedAt`: new, or moved to a newer delete's
            /// time (204).
            case deleted
            /// A delete of a tombstone that is not newer than it (or unstamped): nothing changes (204).
            case alreadyDeleted
            /// 409 E008 with the stored record or tombstone: the write sets nothing because every
            /// field it carries is newer on the server or as new, and it is no replay; or a delete
            /// older than the live record's newest field; or a write not newer than the tombstone
            /// (whose fields are still stored, hidden, when `changesRecord`).
            case conflict
            /// A replace, patch or delete of an id that was never created (404 E007): not kept.
            case notFound
        }

        /// What to answer.
        public let outcome: Outcome
        /// The write's time: its `updated_at` clamped to the server's clock, or stamped when absent
        /// (`LastWriteWins.stamp`).
        public let at: Timestamp
        /// The fields whose written values are stored (each now stamped `at`).
        public let setting: Set<Field>
        /// The record's clock after the write (the stored one when nothing changes); nil only when
        /// there is no record.
        public let clock: Clock?
        /// Whether anything is stored: the values of `setting` and `clock` (version + 1). Also
        /// true for a `conflict` that sets fields hidden under a tombstone: a later comeback shows
        /// each field's newest value whatever the order the writes arrived in.
        public let changesRecord: Bool
    }

    /// Decides one write of a record.
    /// - Parameters:
    ///   - stored: the stored record's clock; nil when the id was never created.
    ///   - requested: the write's `updated_at`, if it sent one (already truncated to ms).
    ///   - now: the deciding end's clock.
    ///   - sameValue: whether the write's value of a field equals the stored one (both normalised);
    ///     consulted only for a field it carries that is stamped exactly the write's time.
    public static func decide(
        _ intent: Intent, stored: Clock?, requested: Timestamp?, now: Timestamp, sameValue: (Field) -> Bool
    ) -> Decision {
        let at = LastWriteWins.stamp(requested: requested, storedUpdatedAt: stored?.updatedAt, now: now)
        guard let stored else {
            guard intent == .create else { return Decision(outcome: .notFound, at: at, setting: [], clock: nil, changesRecord: false) }
            return Decision(outcome: .inserted, at: at, setting: intent.carriedFields, clock: Clock(writtenWhole: at), changesRecord: true)
        }
        var clock = stored
        if intent == .delete {
            if let deletedAt = stored.deletedAt, requested == nil || at <= deletedAt {
                return Decision(outcome: .alreadyDeleted, at: at, setting: [], clock: stored, changesRecord: false)
            }
            clock.delete(at: at)
            let outcome: Decision.Outcome = clock.isDeleted ? .deleted : .conflict
            return Decision(outcome: outcome, at: at, setting: [], clock: clock, changesRecord: clock != stored)
        }
        var setting: Set<Field> = []
        // Fields stamped exactly `at`: holding this write's value (it arrived before: a replay) or
        // another value (another write of the same millisecond arrived first and stays).
        var holdsItsValue = false
        var tiedWithOtherValue = false
        for field in intent.carriedFields {
            if stored[field] < at {
                setting.insert(field)
                clock.stamp(field, at: at)
            } else if stored[field] == at {
                if sameValue(field) { holdsItsValue = true } else { tiedWithOtherValue = true }
            }
        }
        let outcome: Decision.Outcome
        if clock.isDeleted {
            outcome = .conflict
        } else if !setting.isEmpty {
            outcome = .updated
        } else {
            outcome = holdsItsValue && !tiedWithOtherValue ? .replayed : .conflict
        }
        return Decision(outcome: outcome, at: at, setting: setting, clock: clock, changesRecord: !setting.isEmpty)
    }
}
