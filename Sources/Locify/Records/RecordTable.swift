import FoundationEssentials
import LocifyRules
import Postgres
import Primitives

/// The SQL of one synced record table (`CategoryStore`, `LocationStore`): the statements of the
/// reads and field-level last-write-wins writes both tables share, each table with its own SQL text. Every
/// statement that returns the record selects `columns` (the record's declared column set). The
/// functions of the extension run them; `RecordService` calls those.
protocol RecordTable {
    /// The validated write the table stores.
    associatedtype Draft: RecordDraft
    /// The row the table's statements return.
    typealias Record = Draft.Record
    /// What a write needs to know besides its draft, worked out inside the write's transaction:
    /// for a location, where it is shown (`CategoryGraph.Placement`); nothing for a category.
    associatedtype Placement = Void

    /// The record's columns as every statement of the table selects them.
    static var columns: ColumnSet<Record> { get }

    /// The placement of a new record written from `draft`, read inside the write's transaction;
    /// E007 when the draft refers to nothing the user has.
    static func placement(_ connection: PostgresConnection, userID: String, of draft: Draft) throws -> Placement

    /// The record or tombstone stored under `id`, if the user ever used that id.
    static func findQuery(userID: String, id: UUID) -> PostgresQuery

    /// The record or tombstone a write of `id` overwrites, read under the user's write lock after
    /// whatever a pending cascade must settle for that write (`cascades`).
    static func findForWrite(_ connection: PostgresConnection, userID: String, id: UUID, cascades: PendingCascades) throws -> Record?

    /// Inserts the draft as a new record, version 1, stamped `stamp`, every field at `at` (no
    /// `field_stamps`: NULL, migrations/0009); returns the record.
    static func insertQuery(
        userID: String, _ draft: Draft, _ placement: Placement, at: Timestamp, createdAt: Timestamp, stamp: Int64
    ) -> PostgresQuery

    /// The create fast path, one statement: takes the user's write lock and stamp
    /// (`UserStore.nextStampIfAdmitted`: unless the account is missing or the token revoked) and inserts the record when its id is new;
    /// returns the record, or no row when it inserted nothing.
    static func insertIfNewQuery(_ caller: Caller, _ draft: Draft, at: Timestamp, createdAt: Timestamp) -> PostgresQuery

    /// The patch type of the table's writes.
    typealias Patch = Draft.Patch

    /// Stores a write decided over `stored` (`FieldLastWriteWins.Decision`) in one UPDATE: the
    /// patch's values of the fields in `setting` (each column `CASE WHEN` it is set), and `clock`,
    /// the record's clock after the write (`field_stamps`, `updated_at`, `deleted_at`, and where a
    /// location is shown). When the record is live after it: version + 1 and `stamp`; else the
    /// values are kept under the tombstone, which reads as before (same version and stamp).
    /// Returns the record.
    static func update(
        _ connection: PostgresConnection, userID: String, _ patch: Patch, setting: Set<Record.Field>,
        clock: FieldLastWriteWins<Record.Field>.Clock, over stored: Record, stamp: Int64
    ) throws -> Record

    /// Turns the record into a tombstone with `clock` (deleted at `clock.deletedAt`, each field's
    /// stamp kept), version + 1; returns the tombstone.
    static func tombstoneQuery(userID: String, id: UUID, clock: FieldLastWriteWins<Record.Field>.Clock, stamp: Int64) -> PostgresQuery

    /// One live record (nil when there is no such live record), gated.
    static func getQuery(_ caller: Caller, id: UUID) -> GatedRead<Record?>
}

/// The statements of `RecordTable`, run. Write functions run inside a transaction that began with
/// `Accounts.write`, whose change stamp they put on every row they touch.
extension RecordTable where Placement == Void {
    /// A category's writes need nothing besides the draft.
    static func placement(_ connection: PostgresConnection, userID: String, of draft: Draft) throws {}
}

extension RecordTable {
    /// The stored record or tombstone, if the id was ever used by this user.
    static func find(_ connection: PostgresConnection, userID: String, id: UUID) throws -> Record? {
        try connection.query(findQuery(userID: userID, id: id)).first.map(columns.decode)
    }

    /// Inserts a new record: version 1.
    static func insert(
        _ connection: PostgresConnection, userID: String, _ draft: Draft, at: Timestamp, createdAt: Timestamp, stamp: Int64
    ) throws -> Record {
        let placement = try placement(connection, userID: userID, of: draft)
        return try single(
            connection.query(insertQuery(userID: userID, draft, placement, at: at, createdAt: createdAt, stamp: stamp)))
    }

    /// The create fast path (`insertIfNewQuery`); nil when it inserted nothing.
    static func insertIfNew(
        _ connection: PostgresConnection, _ caller: Caller, _ draft: Draft, at: Timestamp, createdAt: Timestamp
    ) throws -> Record? {
        try connection.query(insertIfNewQuery(caller, draft, at: at, createdAt: createdAt)).first.map(columns.decode)
    }

    /// Turns the record into a tombstone with `clock`: version + 1.
    static func tombstone(
        _ connection: PostgresConnection, userID: String, id: UUID, clock: FieldLastWriteWins<Record.Field>.Clock, stamp: Int64
    ) throws -> Record {
        try single(connection.query(tombstoneQuery(userID: userID, id: id, clock: clock, stamp: stamp)))
    }
}

extension RecordTable {
    /// The assignments every `update` ends with, on the table aliased `alias`: the clock after the
    /// write (`field_stamps`, `updated_at`, and `deletedAt`, the row's `deleted_at`), then, when
    /// the record is live after it, version + 1 and the change stamp `stamp`; under a tombstone
    /// the row keeps its version and stamp (it reads as before).
    static func clockAssignments(
        _ alias: String, _ clock: FieldLastWriteWins<Record.Field>.Clock, deletedAt: Timestamp?, stamp: Int64
    ) -> PostgresQuery {
        let isLive = !clock.isDeleted
        return """
            field_stamps = \(clock.storedStamps), updated_at = \(clock.updatedAt), deleted_at = \(deletedAt),
            version = CASE WHEN \(isLive) THEN \(unsafeSQL: alias).version + 1 ELSE \(unsafeSQL: alias).version END,
            change_seq = CASE WHEN \(isLive) THEN \(stamp) ELSE \(unsafeSQL: alias).change_seq END,
            changed_at = CASE WHEN \(isLive) THEN clock_timestamp() ELSE \(unsafeSQL: alias).changed_at END
            """
    }

    /// The one record a write statement returned.
    static func single(_ rows: PostgresRows) throws -> Record {
        guard let row = rows.first else {
            throw PostgresError(kind: .server, message: "a write returned no row")
        }
        return try columns.decode(row)
    }
}

/// A row of a listing statement: the listing's total and one record of the page (nil in the one
/// row of an empty page).
typealias ListingRow<Record> = (total: Int64, record: Record?)

extension ColumnSet {
    /// A listing's row of these records: the total (the SQL expression `total`), then the
    /// records' columns (NULL in the one row of an empty page).
    func listing(total: String) -> ColumnSet<ListingRow<Value>> {
        ColumnSet<Int64>(expression: total).then(orNil).map { (total: $0.0, record: $0.1) }
    }
}

extension Page where Record: StoredRecord {
    /// The page a listing statement read: the total of its first row, the records of its rows.
    init(rows: [ListingRow<Record>], request: PageRequest) {
        self.init(
            records: rows.compactMap(\.record), totalCount: rows.first?.total ?? 0, page: request.page, size: request.size)
    }
}
