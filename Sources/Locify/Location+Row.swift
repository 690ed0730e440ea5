import Postgres

extension Location {
    /// The columns `init(row:at:)` reads, in order, qualified by `alias`.
    static func columns(_ alias: String) -> String {
        "\(alias).id, \(alias).category_id, \(alias).name, \(alias).address, \(alias).description, "
            + "\(alias).latitude, \(alias).longitude, \(alias).is_favorite, \(alias).image_urls, \(alias).version, "
            + "\(alias).created_at, \(alias).updated_at, \(alias).deleted_at"
    }

    /// Decodes the columns of `columns(_:)` starting at column `start`.
    init(row: PostgresRow, at start: Int = 0) throws(PostgresError) {
        self.init(
            id: try row.decode(start),
            categoryID: try row.decode(start + 1),
            name: try row.decode(start + 2),
            address: try row.decode(start + 3),
            description: try row.decode(start + 4),
            latitude: try row.decode(start + 5),
            longitude: try row.decode(start + 6),
            isFavorite: try row.decode(start + 7),
            imageURLs: try row.decode(start + 8),
            version: try row.decode(start + 9),
            createdAt: try row.decode(start + 10),
            updatedAt: try row.decode(start + 11),
            deletedAt: try row.decode(start + 12))
    }

    /// The record, or its tombstone when deleted.
    var state: RecordState {
        if let deletedAt { return .tombstone(.location, id: id, deletedAt: deletedAt) }
        return .location(self)
    }
}
