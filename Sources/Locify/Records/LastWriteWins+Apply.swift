import LocifyRules
import Primitives

extension LastWriteWins.Decision {
    /// Carries out a create or replace decision inside the write transaction (shared by
    /// categories and locations): `insert` and `overwrite` (given the record it replaces) store
    /// the write at the decided time.
    func applyWrite<Record: StoredRecord>(
        stored: Record?, insert: (Timestamp) throws -> Record, overwrite: (Record, Timestamp) throws -> Record
    ) throws -> WriteOutcome<Record> {
        switch (self, stored) {
        case (.insert(let at), _):
            return .created(try insert(at))
        case (.overwrite(let at), let stored?):
            return .updated(try overwrite(stored, at))
        case (.replay, let stored?), (.alreadyDeleted, let stored?):
            return .unchanged(stored)
        case (.conflict, let stored?):
            throw LocifyError.conflict(stored.state)
        default:
            throw LocifyError.notFound(Record.kind)
        }
    }

    /// Carries out a delete decision: `tombstone` deletes at the decided time; an already
    /// deleted record is returned as it is (idempotent). Returns the tombstone.
    func applyDelete<Record: StoredRecord>(stored: Record?, tombstone: (Timestamp) throws -> Record) throws -> Record {
        switch (self, stored) {
        case (.overwrite(let at), _):
            return try tombstone(at)
        case (.conflict, let stored?):
            throw LocifyError.conflict(stored.state)
        case (_, let stored?):
            return stored
        default:
            throw LocifyError.notFound(Record.kind)
        }
    }
}
