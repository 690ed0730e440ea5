import Foundation
import Postgres

/// The SQL of one synced record table (`CategoryStore`, `LocationStore`): the statements
/// `RecordService` runs for the reads and last-write-wins writes both tables share. Each table
/// writes its own SQL text. Write functions run inside a transaction that began with
/// `AccountGate.beginWrite`, whose change stamp they put on every row they touch.
protocol RecordTable {
    /// The validated write the table stores.
    associatedtype Draft: RecordDraft
    /// The row the table's statements return.
    typealias Record = Draft.Record

    /// The stored record or tombstone, if the id was ever used by this user.
    static func find(_ connection: PostgresConnection, userID: String, id: UUID) throws -> Record?

    /// Inserts a new record: version 1.
    static func insert(
        _ connection: PostgresConnection, userID: String, _ draft: Draft, at: Timestamp, createdAt: Timestamp, stamp: Int64
    ) throws -> Record

    /// The create fast path, one statement: takes the user's write lock and stamp (unless the
    /// account is missing or the token revoked) and inserts the record when its id is new. Returns
    /// nil when it inserted nothing.
    static func insertIfNew(
        _ connection: PostgresConnection, _ caller: Caller, _ draft: Draft, at: Timestamp, createdAt: Timestamp
    ) throws -> Record?

    /// Replaces the editable fields (and revives a tombstone): version + 1.
    static func overwrite(_ connection: PostgresConnection, userID: String, _ draft: Draft, at: Timestamp, stamp: Int64) throws -> Record

    /// Turns the record into a tombstone deleted at `at`: version + 1.
    static func tombstone(_ connection: PostgresConnection, userID: String, id: UUID, at: Timestamp, stamp: Int64) throws -> Record

    /// One live record; the first column is the account gate's `tokens_valid_after`, then the
    /// record's columns (NULL when there is no such live record).
    static func getQuery(userID: String, id: UUID) -> PostgresQuery
}

extension Page where Record: StoredRecord {
    /// The page a listing statement read: the total in the second column of the first row, the
    /// records' columns from column `start` on (NULL in the one row of an empty page).
    init(rows: PostgresRows, recordsAt start: Int, request: PageRequest) throws {
        var records: [Record] = []
        records.reserveCapacity(rows.count)
        for row in rows where !row.isNull(start) {
            records.append(try Record(row: row, at: start))
        }
        let total: Int64 = try rows.first?.decode(1) ?? 0
        self.init(records: records, totalCount: total, page: request.page, size: request.size)
    }
}
