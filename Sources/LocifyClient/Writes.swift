import Foundation

/// The body of a category create or replace: the editable fields and the device's `updated_at`.
public struct CategoryWrite: Codable, Sendable, Hashable {
    public var id: UUID
    public var name: String
    public var icon: String?
    /// When the user made the change on the device; nil lets the server stamp it (never conflicts).
    public var updatedAt: Date?

    public init(id: UUID, name: String, icon: String? = nil, updatedAt: Date? = nil) {
        self.id = id
        self.name = name
        self.icon = icon
        self.updatedAt = updatedAt
    }

    enum CodingKeys: String, CodingKey {
        case id, name, icon
        case updatedAt = "updated_at"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(name, forKey: .name)
        try container.encode(icon, forKey: .icon)
        try container.encodeIfPresent(updatedAt, forKey: .updatedAt)
    }
}

/// The body of a location create or replace.
public struct LocationWrite: Codable, Sendable, Hashable {
    public var id: UUID
    public var categoryID: UUID
    public var name: String
    public var address: String?
    public var description: String?
    public var latitude: Double
    public var longitude: Double
    public var isFavorite: Bool
    public var imageURLs: [String]
    /// When the user made the change on the device; nil lets the server stamp it.
    public var updatedAt: Date?

    public init(
        id: UUID, categoryID: UUID, name: String, address: String? = nil, description: String? = nil,
        latitude: Double, longitude: Double, isFavorite: Bool = false, imageURLs: [String] = [], updatedAt: Date? = nil
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
        self.updatedAt = updatedAt
    }

    enum CodingKeys: String, CodingKey {
        case id, name, address, description, latitude, longitude
        case categoryID = "category_id"
        case isFavorite = "is_favorite"
        case imageURLs = "image_urls"
        case updatedAt = "updated_at"
    }

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
        try container.encodeIfPresent(updatedAt, forKey: .updatedAt)
    }
}

/// The body of a delete: the deletion's time and, for a category, where its locations move.
public struct DeleteWrite: Codable, Sendable, Hashable {
    public var id: UUID
    public var updatedAt: Date?
    /// Categories only: move the locations there instead of deleting them with the category.
    public var reassignCategoryID: UUID?

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

    public var kind: RecordKind {
        switch self {
        case .createCategory, .updateCategory, .deleteCategory: return .category
        case .createLocation, .updateLocation, .deleteLocation: return .location
        }
    }

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

    /// The group the server applies it in (API.md 7): category creates and updates (0), then
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
