import LocifyRules
import Postgres

extension Category: StoredRecord {
    typealias Field = CategoryField
    static let kind = RecordKind.category

    /// The category's columns of the table under `alias`, and their decoding.
    static func columns(_ alias: String) -> ColumnSet<Category> {
        ColumnSet(
            ["id", "name", "icon", "location_count", "version", "created_at", "updated_at", "deleted_at", "field_stamps"],
            alias: alias
        ) { column throws(PostgresError) in
            var category = Category(
                id: try column.next(), name: try column.next(), icon: try column.next(), locationCount: try column.next(),
                version: try column.next(), createdAt: try column.next(), updatedAt: try column.next(),
                deletedAt: try column.next())
            category.storedFieldStamps = try column.next()
            return category
        }
    }

    var liveState: RecordState { .category(self) }
}

extension CategoryDraft: RecordDraft {}

extension CategoryPatch: RecordPatch {}
