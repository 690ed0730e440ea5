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

    /// Whether this write carries the same editable content as `stored` (idempotent replay test).
    public func hasSameContent(as stored: Location) -> Bool {
        categoryID == stored.ownCategoryID && name == stored.name && address == stored.address
            && description == stored.description && latitude == stored.latitude
            && longitude == stored.longitude && isFavorite == stored.isFavorite && imageURLs == stored.imageURLs
    }
}
