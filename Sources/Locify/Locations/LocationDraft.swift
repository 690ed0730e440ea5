import FoundationEssentials
import LocifyRules
import Primitives

/// A validated location write (create, upsert or replace), normalised. Every draft passes the
/// rules of openapi.yaml when it is built, whoever builds it (the JSON layer or code).
/// Whether `categoryID` names a live category is checked later, against the database (E007).
public struct LocationDraft: Sendable, Equatable {
    /// The client-chosen id.
    public private(set) var id: UUID
    /// The category the location goes into (checked against the database later: E007).
    public private(set) var categoryID: UUID
    /// Trimmed, 1-255 code points, no control characters.
    public private(set) var name: String
    /// At most 1000 code points; nil when sent empty or all whitespace.
    public private(set) var address: String?
    /// At most 1000 code points; nil when sent empty or all whitespace.
    public private(set) var description: String?
    /// -90...90 degrees.
    public private(set) var latitude: Double
    /// -180...180 degrees.
    public private(set) var longitude: Double
    /// Whether the user marked it as a favourite.
    public private(set) var isFavorite: Bool
    /// At most ten distinct absolute https URLs.
    public private(set) var imageURLs: [String]
    /// Sent `created_at` (create only), not yet clamped.
    public private(set) var createdAt: Timestamp?
    /// Sent `updated_at`, not yet clamped.
    public private(set) var updatedAt: Timestamp?

    /// Validates and normalises a write with the shared rules (`LocationFields`), field by field
    /// in this order: name, address, description, latitude, longitude, image URLs. The first
    /// broken rule is thrown: E003 (`invalidCoordinates`) for a coordinate, E001 (`invalidInput`)
    /// naming the field otherwise.
    public init(
        id: UUID, categoryID: UUID, name: String, address: String? = nil, description: String? = nil,
        latitude: Double, longitude: Double, isFavorite: Bool = false, imageURLs: [String] = [],
        createdAt: Timestamp? = nil, updatedAt: Timestamp? = nil
    ) throws(LocifyError) {
        let fields: LocationFields
        do throws(RuleViolation) {
            fields = try LocationFields(
                name: name, address: address, description: description, latitude: latitude, longitude: longitude,
                isFavorite: isFavorite, imageURLs: imageURLs)
        } catch {
            throw LocifyError(error)
        }
        self.id = id
        self.categoryID = categoryID
        self.name = fields.name
        self.address = fields.address
        self.description = fields.description
        self.latitude = fields.latitude
        self.longitude = fields.longitude
        self.isFavorite = fields.isFavorite
        self.imageURLs = fields.imageURLs
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// The write as a patch of every field.
    public var patch: LocationPatch { LocationPatch(whole: self) }
}

/// A validated write of some fields of a location (`PATCH`, push `patch`; issue 36), normalised:
/// each field it carries passes the rule it passes in a whole write. Carries at least one field;
/// `latitude` and `longitude` are one field, carried together.
public struct LocationPatch: Sendable, Equatable {
    /// The client-chosen id.
    public private(set) var id: UUID
    /// Sent `updated_at`, not yet clamped.
    public private(set) var updatedAt: Timestamp?
    /// The fields it carries.
    public private(set) var fields: Set<LocationField>
    /// The category, when carried (checked against the database later: E007).
    public private(set) var categoryID: UUID?
    /// The name, when carried.
    public private(set) var name: String?
    /// The address, when carried (nil clears it).
    public private(set) var address: String?
    /// The description, when carried (nil clears it).
    public private(set) var description: String?
    /// The latitude, when the coordinates are carried.
    public private(set) var latitude: Double?
    /// The longitude, when the coordinates are carried.
    public private(set) var longitude: Double?
    /// The favourite flag, when carried.
    public private(set) var isFavorite: Bool?
    /// The photos, when carried.
    public private(set) var imageURLs: [String]?

    /// Validates and normalises the fields sent (nil: not carried; `.some(nil)`: cleared) with the
    /// rules of a whole write (`LocationRules`), in the order of `LocationDraft`. A patch without a
    /// field, or with only one of `latitude` and `longitude`, is E001.
    public init(
        id: UUID, categoryID: UUID? = nil, name: String? = nil, address: String?? = nil, description: String?? = nil,
        latitude: Double? = nil, longitude: Double? = nil, isFavorite: Bool? = nil, imageURLs: [String]? = nil,
        updatedAt: Timestamp? = nil
    ) throws(LocifyError) {
        self.id = id
        self.updatedAt = updatedAt
        fields = []
        if let categoryID {
            self.categoryID = categoryID
            fields.insert(.categoryID)
        }
        if let name {
            self.name = try LocifyError.applying(LocationRules.name, to: name)
            fields.insert(.name)
        }
        if let address {
            self.address = try address.flatMap { (text) throws(LocifyError) in try LocifyError.applying(LocationRules.address, to: text) }
            fields.insert(.address)
        }
        if let description {
            self.description = try description.flatMap { (text) throws(LocifyError) in
                try LocifyError.applying(LocationRules.description, to: text)
            }
            fields.insert(.description)
        }
        switch (latitude, longitude) {
        case (let latitude?, let longitude?):
            self.latitude = try LocifyError.applying(LocationRules.latitude, to: latitude)
            self.longitude = try LocifyError.applying(LocationRules.longitude, to: longitude)
            fields.insert(.coordinates)
        case (nil, nil): break
        case (nil, _?): throw LocifyError.invalid("latitude", "must be sent with longitude")
        case (_?, nil): throw LocifyError.invalid("longitude", "must be sent with latitude")
        }
        if let isFavorite {
            self.isFavorite = isFavorite
            fields.insert(.isFavorite)
        }
        if let imageURLs {
            self.imageURLs = try LocifyError.applying(LocationRules.imageURLs, to: imageURLs)
            fields.insert(.imageURLs)
        }
        if fields.isEmpty { throw LocifyError.emptyPatch }
    }

    fileprivate init(whole draft: LocationDraft) {
        id = draft.id
        updatedAt = draft.updatedAt
        fields = Set(LocationField.allCases)
        categoryID = draft.categoryID
        name = draft.name
        address = draft.address
        description = draft.description
        latitude = draft.latitude
        longitude = draft.longitude
        isFavorite = draft.isFavorite
        imageURLs = draft.imageURLs
    }

    /// Whether its value of `field` (which it carries) equals `stored`'s (the category its own
    /// last write named, wherever it is shown).
    public func hasSameValue(_ field: LocationField, as stored: Location) -> Bool {
        switch field {
        case .categoryID: categoryID == stored.ownCategoryID
        case .name: name == stored.name
        case .address: address == stored.address
        case .description: description == stored.description
        case .coordinates: latitude == stored.latitude && longitude == stored.longitude
        case .isFavorite: isFavorite == stored.isFavorite
        case .imageURLs: imageURLs == stored.imageURLs
        }
    }
}
