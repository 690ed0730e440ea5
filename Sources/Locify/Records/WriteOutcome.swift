/// What an accepted single-record write did: the API answers 201 for `created` and 200 otherwise.
public enum WriteOutcome<Record: Sendable>: Sendable {
    /// A new record was inserted.
    case created(Record)
    /// An existing record (or tombstone) was overwritten: version + 1.
    case updated(Record)
    /// An idempotent replay: the stored record, unchanged.
    case unchanged(Record)

    /// The record the response carries.
    public var record: Record {
        switch self {
        case .created(let record), .updated(let record), .unchanged(let record): return record
        }
    }
}
