import Foundation

/// The body of a category create or replace: the editable fields and the device's `updated_at`.
public struct CategoryWrite: Codable, Sendable, Hashable {
    /// The category's id: chosen by the client on create, the record replaced on update.
    public var id: UUID
    /// Trimmed by the server; 1-255 characters, no control characters.
    public var name: String
    /// An absolute `https` URL of at most 2048 characters, or nil for none.
    public var icon: String?
    /// When the record was first made on the device; the server takes it on create only.
    public var createdAt: Date?
    /// When the user made the change on the device; nil lets the server stamp it (never conflicts).
    public var updatedAt: Date?

    /// A create or replace of category `id` with these fields, made at `updatedAt` (nil: the server stamps it).
    public init(id: UUID, name: String, icon: String? = nil, createdAt: Date? = nil, updatedAt: Date? = nil) {
        self.id = id
        self.name = name
        self.icon = icon
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    enum CodingKeys: String, CodingKey {
        case id, name, icon
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }

    /// Encodes the request body; `icon` is always sent (null clears it, a replace being complete) and
    /// `updated_at` only when set.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(name, forKey: .name)
        try container.encode(icon, forKey: .icon)
        try container.encodeIfPresent(createdAt, forKey: .createdAt)
        try container.encodeIfPresent(updatedAt, forKey: .updatedAt)
    }
}

/// The body of a location create or replace.
public struct LocationWrite: Codable, Sendable, Hashable {
    /// The location's id: chosen by the client on create, the record replaced on update.
    public var id: UUID
    /// One of the user's live categories (else E007).
    public var categoryID: UUID
    /// Trimmed by the server; 1-255 characters, no control characters.
    public var name: String
    /// At most 1000 characters; nil (or blank) for none.
    public var address: String?
    /// At most 1000 characters; nil (or blank) for none.
    public var description: String?
    /// Degrees in [-90, 90] (else E003).
    public var latitude: Double
    /// Degrees in [-180, 180] (else E003).
    public var longitude: Double
    /// Whether the user marked the location as a favourite.
    public var isFavorite: Bool
    /// At most 10 distinct absolute `https` URLs of at most 2048 characters each.
    public var imageURLs: [String]
    /// When the record was first made on the device; the server takes it on create only.
    public var createdAt: Date?
    /// When the user made the change on the device; nil lets the server stamp it.
    public var updatedAt: Date?

    /// A create or replace of location `id` with these fields, made at `updatedAt` (nil: the server stamps it).
    public init(
        id: UUID, categoryID: UUID, name: String, address: String? = nil, description: String? = nil,
        latitude: Double, longitude: Double, isFavorite: Bool = false, imageURLs: [String] = [], createdAt: Date? = nil,
        updatedAt: Date? = nil
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

    enum CodingKeys: String, CodingKey {
        case id, name, address, description, latitude, longitude
        case categoryID = "category_id"
        case isFavorite = "is_favorite"
        case imageURLs = "image_urls"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }

    /// Encodes the request body; optional fields are always sent (null clears them, a replace being
    /// complete) except `updated_at`, sent only when set.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(categoryID, forKey: .categoryID)
        try container.encode(name, forKey: .name)
        try container.encode(address, forKey: .address)
        try container.encode(description, forKey: .description)
        try container.encode(latitude, forKey: .latitude)
        try container.encode(longitude, forKey: .longitude)
        try container.encode(isFavorite, forKey: .isFavorite)
        try container.encode(imageURLs, forKey: .imageURLs)
        try container.encodeIfPresent(createdAt, forKey: .createdAt)
        try container.encodeIfPresent(updatedAt, forKey: .updatedAt)
    }
}

/// The body of a delete: the deletion's time and, for a category, where its locations move.
public struct DeleteWrite: Codable, Sendable, Hashable {
    /// The record to delete.
    public var id: UUID
    /// When the user deleted it on the device; nil lets the server stamp it. A live record newer than
    /// this makes the delete fail with E008.
    public var updatedAt: Date?
    /// Categories only: move the locations there instead of deleting them with the category.
    public var reassignCategoryID: UUID?

    /// A delete of record `id`, made at `updatedAt`; for a category, `reassignCategoryID` keeps its locations.
    public init(id: UUID, updatedAt: Date? = nil, reassignCategoryID: UUID? = nil) {
        self.id = id
        self.updatedAt = updatedAt
        self.reassignCategoryID = reassignCategoryID
    }

    enum CodingKeys: String, CodingKey {
        case id
        case updatedAt = "updated_at"
        case reassignCategoryID = "reassign_category_id"
    }

    /// Encodes the request body, each optional field only when set.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encodeIfPresent(updatedAt, forKey: .updatedAt)
        try container.encodeIfPresent(reassignCategoryID, forKey: .reassignCategoryID)
    }
}

/// One offline change of `POST /v1/sync/push`.
public enum PushChange: Codable, Sendable, Hashable {
    case createCategory(CategoryWrite)
    case updateCategory(CategoryWrite)
    case deleteCategory(DeleteWrite)
    case createLocation(LocationWrite)
    case updateLocation(LocationWrite)
    case deleteLocation(DeleteWrite)

    /// `create`, `update` or `delete`.
    public enum Action: String, Codable, Sendable, Hashable {
        case create, update, delete
    }

    /// Whether the change is about a category or a location (`type` in the message).
    public var kind: RecordKind {
        switch self {
        case .createCategory, .updateCategory, .deleteCategory: return .category
        case .createLocation, .updateLocation, .deleteLocation: return .location
        }
    }

    /// Whether the change creates, updates or deletes (`action` in the message).
    public var action: Action {
        switch self {
        case .createCategory, .createLocation: return .create
        case .updateCategory, .updateLocation: return .update
        case .deleteCategory, .deleteLocation: return .delete
        }
    }

    /// The record the change is about.
    public var recordID: UUID {
        switch self {
        case .createCategory(let write), .updateCategory(let write): return write.id
        case .createLocation(let write), .updateLocation(let write): return write.id
        case .deleteCategory(let write), .deleteLocation(let write): return write.id
        }
    }

    /// The device time the change carries.
    public var updatedAt: Date? {
        switch self {
        case .createCategory(let write), .updateCategory(let write): return write.updatedAt
        case .createLocation(let write), .updateLocation(let write): return write.updatedAt
        case .deleteCategory(let write), .deleteLocation(let write): return write.updatedAt
        }
    }

    /// The group the server applies it in (openapi.yaml): category creates and updates (0), then
    /// location changes (1), then category deletes (2).
    public var applicationGroup: Int {
        switch self {
        case .createCategory, .updateCategory: return 0
        case .createLocation, .updateLocation, .deleteLocation: return 1
        case .deleteCategory: return 2
        }
    }

    enum CodingKeys: String, CodingKey {
        case type, action, data
    }

    /// Decodes `{"type", "action", "data"}`, the form the outbox stores and the server reads.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let kind = try container.decode(RecordKind.self, forKey: .type)
        let action = try container.decode(Action.self, forKey: .action)
        switch (kind, action) {
        case (.category, .create): self = .createCategory(try container.decode(CategoryWrite.self, forKey: .data))
        case (.category, .update): self = .updateCategory(try container.decode(CategoryWrite.self, forKey: .data))
        case (.category, .delete): self = .deleteCategory(try container.decode(DeleteWrite.self, forKey: .data))
        case (.location, .create): self = .createLocation(try container.decode(LocationWrite.self, forKey: .data))
        case (.location, .update): self = .updateLocation(try container.decode(LocationWrite.self, forKey: .data))
        case (.location, .delete): self = .deleteLocation(try container.decode(DeleteWrite.self, forKey: .data))
        }
    }

    /// Encodes `{"type", "action", "data"}`, the form of `POST /v1/sync/push`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind, forKey: .type)
        try container.encode(action, forKey: .action)
        switch self {
        case .createCategory(let write), .updateCategory(let write): try container.encode(write, forKey: .data)
        case .createLocation(let write), .updateLocation(let write): try container.encode(write, forKey: .data)
        case .deleteCategory(let write), .deleteLocation(let write): try container.encode(write, forKey: .data)
        }
    }
}
