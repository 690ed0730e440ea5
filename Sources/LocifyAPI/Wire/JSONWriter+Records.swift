import FoundationEssentials
import JSON
import Locify
import LocifyRules
import Primitives

/// The JSON representation of the API's records (openapi.yaml): snake_case fields,
/// lower-case UUIDs, RFC 3339 millisecond UTC timestamps, `sync_status` always `synced`.
extension JSONWriter {
    mutating func uuid(_ id: UUID) {
        unescapedString { id.appendLowercased(to: &$0) }
    }

    package mutating func timestamp(_ timestamp: Timestamp) {
        unescapedString { timestamp.appendRFC3339(to: &$0) }
    }

    mutating func category(_ category: Category, userID: String) {
        beginObject()
        key("id")
        uuid(category.id)
        key("user_id")
        string(userID)
        key("name")
        string(category.name)
        key("icon")
        string(category.icon)
        key("is_default")
        bool(category.isDefault)
        key("location_count")
        int64(category.locationCount)
        key("sync_status")
        string("synced")
        key("version")
        int64(category.version)
        key("created_at")
        timestamp(category.createdAt)
        key("updated_at")
        timestamp(category.updatedAt)
        endObject()
    }

    mutating func location(_ location: Location, userID: String) {
        beginObject()
        key("id")
        uuid(location.id)
        key("user_id")
        string(userID)
        key("category_id")
        uuid(location.categoryID)
        key("name")
        string(location.name)
        key("address")
        string(location.address)
        key("description")
        string(location.description)
        key("latitude")
        double(location.latitude)
        key("longitude")
        double(location.longitude)
        key("is_favorite")
        bool(location.isFavorite)
        key("image_urls")
        beginArray()
        for url in location.imageURLs { string(url) }
        endArray()
        key("sync_status")
        string("synced")
        key("version")
        int64(location.version)
        key("created_at")
        timestamp(location.createdAt)
        key("updated_at")
        timestamp(location.updatedAt)
        endObject()
    }

    /// `{"id", "deleted": true, "deleted_at"}`.
    mutating func tombstone(id: UUID, deletedAt: Timestamp) {
        beginObject()
        key("id")
        uuid(id)
        key("deleted")
        bool(true)
        key("deleted_at")
        timestamp(deletedAt)
        endObject()
    }

    /// A live record, or the tombstone of a deleted one.
    mutating func recordState(_ state: RecordState, userID: String?) {
        switch state {
        case .category(let category) where category.deletedAt == nil:
            self.category(category, userID: userID ?? "")
        case .location(let location) where location.deletedAt == nil:
            self.location(location, userID: userID ?? "")
        default:
            tombstone(id: state.id, deletedAt: state.deletedAt ?? .epoch)
        }
    }

    /// `{"data": [...], "meta": {...}}` of a listing.
    mutating func page<Record>(_ page: Page<Record>, record: (inout JSONWriter, Record) -> Void) {
        beginObject()
        key("data")
        beginArray()
        for item in page.records { record(&self, item) }
        endArray()
        key("meta")
        beginObject()
        key("total_count")
        int64(page.totalCount)
        key("total_pages")
        int64(page.totalPages)
        key("page")
        int(page.page)
        key("size")
        int(page.size)
        endObject()
        endObject()
    }

    mutating func profile(_ profile: UserProfile) {
        beginObject()
        key("id")
        string(profile.id)
        key("email")
        string(profile.email)
        key("name")
        string(profile.name)
        key("created_at")
        timestamp(profile.createdAt)
        key("updated_at")
        timestamp(profile.updatedAt)
        endObject()
    }
}

extension RecordState {
    /// When the record was deleted, for tombstones.
    var deletedAt: Timestamp? {
        switch self {
        case .category(let category): return category.deletedAt
        case .location(let location): return location.deletedAt
        case .tombstone(_, _, let deletedAt): return deletedAt
        }
    }
}
