import LocifyRules

extension FieldLastWriteWins.Clock {
    /// The clock of a stored row: its `field_stamps` (migrations/0009), or every field at the
    /// row's `updated_at` when the row has none (NULL: a row written whole) or not one per field.
    init(stampsOf stored: [Int64]?, updatedAt: Timestamp, deletedAt: Timestamp?) {
        self =
            stored.flatMap { Self(milliseconds: $0, deletedAt: deletedAt) } ?? Self(writtenWhole: updatedAt, deletedAt: deletedAt)
    }

    /// The `field_stamps` a row with this clock stores: nil (NULL) when every field stands at the
    /// record's `updated_at`, as after a create or a whole write, so such a write stores no array.
    var storedStamps: [Int64]? {
        stamps.allSatisfy { $0 == updatedAt } ? nil : milliseconds
    }
}
