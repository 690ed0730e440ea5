import Postgres

extension Category: StoredRecord {
    static let kind = RecordKind.category

    static let columnNames = ["id", "name", "icon", "location_count", "version", "created_at", "updated_at", "deleted_at"]

    /// Decodes the columns of `columnNames` starting at column `start`.
    init(row: PostgresRow, at start: Int = 0) throws(PostgresError) {
        self.init(
            id: try row.decode(start),
            name: try row.decode(start + 1),
            icon: try row.decode(start + 2),
            locationCount: try row.decode(start + 3),
            version: try row.decode(start + 4),
            createdAt: try row.decode(start + 5),
            updatedAt: try row.decode(start + 6),
            deletedAt: try row.decode(start + 7))
    }

    var liveState: RecordState { .category(self) }
}

extension CategoryDraft: RecordDraft {}
