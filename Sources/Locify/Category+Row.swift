import Postgres

extension Category {
    /// The columns `init(row:at:)` reads, in order, qualified by `alias`.
    static func columns(_ alias: String) -> String {
        "\(alias).id, \(alias).name, \(alias).icon, \(alias).location_count, \(alias).version, "
            + "\(alias).created_at, \(alias).updated_at, \(alias).deleted_at"
    }

    /// Decodes the columns of `columns(_:)` starting at column `start`.
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

    /// The record, or its tombstone when deleted.
    var state: RecordState {
        if let deletedAt { return .tombstone(.category, id: id, deletedAt: deletedAt) }
        return .category(self)
    }
}
