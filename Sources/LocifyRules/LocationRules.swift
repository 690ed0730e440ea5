/// The rules of a location write (openapi.yaml), each refusing with the code and message the
/// server answers: the server's drafts and a client's edits go through these same functions.
public enum LocationRules {
    /// Most photos one location may carry.
    public static let maxImageURLs = 10

    /// Trimmed of Unicode whitespace, then 1-255 code points without control characters.
    /// Returns the trimmed name. Idempotent.
    public static func name(_ raw: String) throws(RuleViolation) -> String {
        try TextRules.name(raw, field: "name")
    }

    /// At most 1000 code points, no control characters but tab and line breaks; empty or
    /// all-whitespace becomes nil. Idempotent.
    public static func address(_ raw: String) throws(RuleViolation) -> String? {
        try TextRules.longText(raw, field: "address")
    }

    /// The rule of `address`, for `description`.
    public static func description(_ raw: String) throws(RuleViolation) -> String? {
        try TextRules.longText(raw, field: "description")
    }

    /// -90...90 (E003 otherwise).
    public static func latitude(_ value: Double) throws(RuleViolation) -> Double {
        guard (-90.0...90.0).contains(value) else {
            throw .invalidCoordinates(field: "latitude", reason: "must be between -90 and 90")
        }
        return value
    }

    /// -180...180 (E003 otherwise).
    public static func longitude(_ value: Double) throws(RuleViolation) -> Double {
        guard (-180.0...180.0).contains(value) else {
            throw .invalidCoordinates(field: "longitude", reason: "must be between -180 and 180")
        }
        return value
    }

    /// At most ten absolute https URLs, no two the same. Returned unchanged.
    public static func imageURLs(_ urls: [String]) throws(RuleViolation) -> [String] {
        if urls.count > maxImageURLs {
            throw .invalidInput(field: "image_urls", reason: "must hold at most \(maxImageURLs) URLs")
        }
        for url in urls {
            _ = try TextRules.httpsURL(url, field: "image_urls")
        }
        // Compared by code points: canonically equivalent spellings are different URLs.
        if Set(urls.map { Array($0.unicodeScalars) }).count != urls.count {
            throw .invalidInput(field: "image_urls", reason: "must not contain duplicates")
        }
        return urls
    }

    /// A location's `category_id` must name one of the user's live categories (E007). (A write
    /// naming a category deleted with a reassign is shown in the target instead, and one naming a
    /// category deleted with a cascade is answered E007 but kept: openapi.yaml, "Writes in any
    /// order".)
    public static func checkCategory(isLive: Bool) throws(RuleViolation) {
        if !isLive { throw .unknownCategory }
    }
}

/// The editable fields of a location write, validated and normalised by `LocationRules`.
public struct LocationFields: Sendable, Hashable {
    /// Trimmed, 1-255 code points, no control characters.
    public let name: String
    /// At most 1000 code points; nil when sent empty or all whitespace.
    public let address: String?
    /// At most 1000 code points; nil when sent empty or all whitespace.
    public let description: String?
    /// -90...90 degrees.
    public let latitude: Double
    /// -180...180 degrees.
    public let longitude: Double
    /// Whether the user marked it as a favourite (no rule).
    public let isFavorite: Bool
    /// At most ten distinct absolute https URLs.
    public let imageURLs: [String]

    /// Validates field by field in this order: name, address, description, latitude, longitude,
    /// image URLs; the first broken rule is thrown (E003 for a coordinate, E001 otherwise).
    public init(
        name: String, address: String?, description: String?, latitude: Double, longitude: Double,
        isFavorite: Bool, imageURLs: [String]
    ) throws(RuleViolation) {
        self.name = try LocationRules.name(name)
        if let address { self.address = try LocationRules.address(address) } else { self.address = nil }
        if let description { self.description = try LocationRules.description(description) } else { self.description = nil }
        self.latitude = try LocationRules.latitude(latitude)
        self.longitude = try LocationRules.longitude(longitude)
        self.isFavorite = isFavorite
        self.imageURLs = try LocationRules.imageURLs(imageURLs)
    }
}
