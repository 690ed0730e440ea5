import FoundationEssentials
import Primitives

/// A validated location write (create, upsert or replace), normalised. Every draft passes the
/// rules of openapi.yaml when it is built, whoever builds it (the JSON layer or code).
/// Whether `categoryID` names a live category is checked later, against the database (E007).
public struct LocationDraft: Sendable, Equatable {
    /// Most photos one location may carry.
    public static let maxImageURLs = 10

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

    /// Validates and normalises a write, field by field in this order: name, address,
    /// description, latitude, longitude, image URLs. The first broken rule is thrown: E003
    /// (`invalidCoordinates`) for a coordinate, E001 (`invalidInput`) naming the field otherwise.
    public init(
        id: UUID, categoryID: UUID, name: String, address: String? = nil, description: String? = nil,
        latitude: Double, longitude: Double, isFavorite: Bool = false, imageURLs: [String] = [],
        createdAt: Timestamp? = nil, updatedAt: Timestamp? = nil
    ) throws(LocifyError) {
        self.id = id
        self.categoryID = categoryID
        self.name = try Self.validName(name)
        self.address = try address.flatMap { (text) throws(LocifyError) in try Self.validAddress(text) }
        self.description = try description.flatMap { (text) throws(LocifyError) in try Self.validDescription(text) }
        self.latitude = try Self.validLatitude(latitude)
        self.longitude = try Self.validLongitude(longitude)
        self.isFavorite = isFavorite
        self.imageURLs = try Self.validImageURLs(imageURLs)
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// The name rule: trimmed of Unicode whitespace, then 1-255 code points without control
    /// characters. Returns the trimmed name. Idempotent.
    public static func validName(_ raw: String) throws(LocifyError) -> String {
        try TextRules.name(raw, field: "name")
    }

    /// At most 1000 code points, no control characters but tab and line breaks; empty or
    /// all-whitespace becomes nil. Idempotent.
    public static func validAddress(_ raw: String) throws(LocifyError) -> String? {
        try TextRules.longText(raw, field: "address")
    }

    /// The rule of `address`, for `description`.
    public static func validDescription(_ raw: String) throws(LocifyError) -> String? {
        try TextRules.longText(raw, field: "description")
    }

    /// -90...90 (E003 otherwise).
    public static func validLatitude(_ value: Double) throws(LocifyError) -> Double {
        guard (-90.0...90.0).contains(value) else {
            throw .invalidCoordinates(FieldIssue(field: "latitude", message: "must be between -90 and 90"))
        }
        return value
    }

    /// -180...180 (E003 otherwise).
    public static func validLongitude(_ value: Double) throws(LocifyError) -> Double {
        guard (-180.0...180.0).contains(value) else {
            throw .invalidCoordinates(FieldIssue(field: "longitude", message: "must be between -180 and 180"))
        }
        return value
    }

    /// At most ten absolute https URLs, no two the same. Returned unchanged.
    public static func validImageURLs(_ urls: [String]) throws(LocifyError) -> [String] {
        if urls.count > maxImageURLs {
            throw .invalid("image_urls", "must hold at most \(maxImageURLs) URLs")
        }
        for url in urls {
            _ = try TextRules.httpsURL(url, field: "image_urls")
        }
        // Compared by code points: canonically equivalent spellings are different URLs.
        if Set(urls.map { Array($0.unicodeScalars) }).count != urls.count {
            throw .invalid("image_urls", "must not contain duplicates")
        }
        return urls
    }

    /// Whether this write carries the same editable content as `stored` (idempotent replay test).
    public func hasSameContent(as stored: Location) -> Bool {
        categoryID == stored.categoryID && name == stored.name && address == stored.address
            && description == stored.description && latitude == stored.latitude
            && longitude == stored.longitude && isFavorite == stored.isFavorite && imageURLs == stored.imageURLs
    }
}
