/// The fields of one kind of record that last write wins merges one by one (issue 36), in the
/// fixed order of the record's field stamps: `rawValue` is the field's index in
/// `FieldLastWriteWins.Clock.stamps` and in the server's stamps column, so a new field is appended
/// with the next index and no field is ever renumbered.
public protocol RecordField: CaseIterable, Hashable, Sendable, RawRepresentable where RawValue == Int {
    /// The field's name in the API: its key in a feed change's `field_updated_at` (openapi.yaml).
    var wireName: String { get }
}

/// The merged fields of a category, in stamp order.
public enum CategoryField: Int, RecordField {
    case name = 0
    case icon = 1

    /// The field's key in `field_updated_at`.
    public var wireName: String {
        switch self {
        case .name: "name"
        case .icon: "icon"
        }
    }
}

/// The merged fields of a location, in stamp order. `latitude` and `longitude` are one field, so
/// a place never ends at one device's latitude and another's longitude.
public enum LocationField: Int, RecordField {
    case categoryID = 0
    case name = 1
    case address = 2
    case description = 3
    case coordinates = 4
    case isFavorite = 5
    case imageURLs = 6

    /// The field's key in `field_updated_at`.
    public var wireName: String {
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
