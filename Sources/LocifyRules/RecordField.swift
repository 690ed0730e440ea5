/// The fields of one kind of record that last write wins merges one by one (issue 36), in the
/// fixed order of the record's field stamps: `rawValue` is the field's index in
/// `FieldLastWriteWins.Clock.stamps` and in the server's stamps column, so a new field is appended
/// with the next index and no field is ever renumbered.
public protocol RecordField: CaseIterable, Hashable, Sendable, RawRepresentable where RawValue == Int {}

/// The merged fields of a category, in stamp order.
public enum CategoryField: Int, RecordField {
    case name = 0
    case icon = 1
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
}
