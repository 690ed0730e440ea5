import LocifyRules
import Postgres

extension Location: StoredRecord {
    typealias Field = LocationField
    static let kind = RecordKind.location

    /// The location's columns of the table under `alias`, and their decoding.
    static func columns(_ alias: String) -> ColumnSet<Location> {
        ColumnSet(
            [
                "id", "category_id", "name", "address", "description", "latitude", "longitude", "is_favorite", "image_urls",
                "version", "created_at", "updated_at", "deleted_at", "own_category_id", "hidden", "field_stamps",
            ],
            alias: alias
        ) { column throws(PostgresError) in
            var location = Location(
                id: try column.next(), categoryID: try column.next(), name: try column.next(), address: try column.next(),
                description: try column.next(), latitude: try column.next(), longitude: try column.next(),
                isFavorite: try column.next(), imageURLs: try column.next(), version: try column.next(),
                createdAt: try column.next(), updatedAt: try column.next(), deletedAt: try column.next())
            location.placedCategoryID = try column.next()
            location.isHiddenWithCategory = try column.next()
            location.storedFieldStamps = try column.next()
            return location
        }
    }

    var liveState: RecordState { .location(self) }
}

extension LocationDraft: RecordDraft {}

extension LocationPatch: RecordPatch {}
