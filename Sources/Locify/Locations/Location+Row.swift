import LocifyRules
import Postgres

extension Location: StoredRecord {
    static let kind = RecordKind.location

    static let columnNames = [
        "id", "category_id", "name", "address", "description", "latitude", "longitude", "is_favorite", "image_urls", "version",
        "created_at", "updated_at", "deleted_at", "own_category_id", "hidden",
    ]

    /// Decodes the columns of `columnNames` starting at column `start`.
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
        placedCategoryID = try row.decode(start + 13)
        isHiddenWithCategory = try row.decode(start + 14)
    }

    var liveState: RecordState { .location(self) }

    /// Its own last write's clock: a location hidden with its category is not deleted itself.
    var clock: LastWriteWins.Stored { .init(updatedAt: updatedAt, isDeleted: deletedAt != nil && !isHiddenWithCategory) }
}

extension LocationDraft: RecordDraft {}
