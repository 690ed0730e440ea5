import Locify
import LocifyRules

/// The API's names of the record kinds: a push change's `type` (read and echoed), a feed
/// change's `type`, and the noun of an E007 ("category not found").
extension RecordKind {
    /// `"category"` or `"location"`.
    var wireName: String {
        switch self {
        case .category: return "category"
        case .location: return "location"
        }
    }

    /// The kind a change's `type` names (`category` or `location`); nil for any other text.
    init?(wireName: String) {
        guard let kind = Self.allCases.first(where: { $0.wireName == wireName }) else { return nil }
        self = kind
    }
}

/// The API's names of the fields last write wins merges one by one: the keys of a feed change's
/// `field_updated_at` (openapi.yaml).
protocol WireField: RecordField {
    /// The field's key.
    var wireName: String { get }
}

extension CategoryField: WireField {
    var wireName: String {
        switch self {
        case .name: "name"
        case .icon: "icon"
        }
    }
}

extension LocationField: WireField {
    var wireName: String {
        switch self {
        case .categoryID: "category_id"
        case .name: "name"
        case .address: "address"
        case .description: "description"
        case .coordinates: "coordinates"
        case .isFavorite: "is_favorite"
        case .imageURLs: "image_urls"
        }
    }
}
