import Foundation
import JSON

/// A validated location write (create, upsert or replace) as the client sent it, normalised.
public struct LocationDraft: Sendable, Equatable {
    /// Most photos one location may carry.
    public static let maxImageURLs = 10

    /// The client-chosen id.
    public var id: UUID
    /// The category the location goes into.
    public var categoryID: UUID
    /// The display name, trimmed.
    public var name: String
    /// The postal address, if any.
    public var address: String?
    /// Free-text notes, if any.
    public var description: String?
    /// Degrees north, -90 to 90.
    public var latitude: Double
    /// Degrees east, -180 to 180.
    public var longitude: Double
    /// Whether the user marked it as a favourite.
    public var isFavorite: Bool
    /// Firebase Storage URLs of its photos, at most `maxImageURLs`.
    public var imageURLs: [String]
    /// Sent `created_at` (create only), not yet clamped.
    public var createdAt: Timestamp?
    /// Sent `updated_at`, not yet clamped.
    public var updatedAt: Timestamp?

    /// A draft from already-validated values.
    public init(
        id: UUID, categoryID: UUID, name: String, address: String? = nil, description: String? = nil,
        latitude: Double, longitude: Double, isFavorite: Bool = false, imageURLs: [String] = [],
        createdAt: Timestamp? = nil, updatedAt: Timestamp? = nil
    ) {
        self.id = id
        self.categoryID = categoryID
        self.name = name
        self.address = address
        self.description = description
        self.latitude = latitude
        self.longitude = longitude
        self.isFavorite = isFavorite
        self.imageURLs = imageURLs
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// Decodes and validates a location body (API.md sections 4 and 11). Whether `category_id`
    /// names a live category is checked later, against the database (E007).
    public init(json body: JSONValue, userID: String, pathID: UUID? = nil) throws(LocifyError) {
        let fields = try FieldReader(body: body)
        id = try fields.recordID(pathID: pathID)
        try fields.checkUserID(userID)
        categoryID = try fields.requiredUUID("category_id")
        name = try TextRules.name(fields.requiredString("name"), field: "name")
        address = try fields.optionalString("address").flatMap { (text) throws(LocifyError) in
            try TextRules.longText(text, field: "address")
        }
        description = try fields.optionalString("description").flatMap { (text) throws(LocifyError) in
            try TextRules.longText(text, field: "description")
        }
        latitude = try fields.requiredNumber("latitude")
        if !(-90.0...90.0).contains(latitude) {
            throw .invalidCoordinates(FieldIssue(field: "latitude", message: "must be between -90 and 90"))
        }
        longitude = try fields.requiredNumber("longitude")
        if !(-180.0...180.0).contains(longitude) {
            throw .invalidCoordinates(FieldIssue(field: "longitude", message: "must be between -180 and 180"))
        }
        isFavorite = try fields.bool("is_favorite", default: false)
        imageURLs = try fields.stringArray("image_urls")
        if imageURLs.count > LocationDraft.maxImageURLs {
            throw .invalid("image_urls", "must hold at most \(LocationDraft.maxImageURLs) URLs")
        }
        for url in imageURLs {
            _ = try TextRules.httpsURL(url, field: "image_urls")
        }
        // Compared by code points: canonically equivalent spellings are different URLs.
        if Set(imageURLs.map { Array($0.unicodeScalars) }).count != imageURLs.count {
            throw .invalid("image_urls", "must not contain duplicates")
        }
        try fields.checkSyncStatus()
        createdAt = try fields.optionalTimestamp("created_at")
        updatedAt = try fields.optionalTimestamp("updated_at")
    }

    /// Whether this write carries the same editable content as `stored` (idempotent replay test).
    public func hasSameContent(as stored: Location) -> Bool {
        categoryID == stored.categoryID && name == stored.name && address == stored.address
            && description == stored.description && latitude == stored.latitude
            && longitude == stored.longitude && isFavorite == stored.isFavorite && imageURLs == stored.imageURLs
    }
}
