import LocifyRules

/// A row's `field_stamps` as a record keeps them: nil when every field stands at the row's
/// `updated_at` (a record written whole equals one built in code with the same columns).
func keptFieldStamps(_ stamps: [Int64]?, updatedAt: Timestamp) -> [Int64]? {
    stamps?.allSatisfy { $0 == updatedAt.milliseconds } == false ? stamps : nil
}

extension FieldLastWriteWins.Clock {
    /// The clock of a stored row: its `field_stamps` (migrations/0009), or every field at the
    /// row's `updated_at` when the row has none (a row written whole by a script that does not
    /// know the column) or not one per field.
    init(stampsOf stored: [Int64]?, updatedAt: Timestamp, deletedAt: Timestamp?) {
        self =
            stored.flatMap { Self(milliseconds: $0, deletedAt: deletedAt) } ?? Self(writtenWhole: updatedAt, deletedAt: deletedAt)
    }
}
