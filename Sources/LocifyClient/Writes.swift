import Foundation
import LocifyRules

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

/// The body of a partial write of a category (push `"action": "patch"`, issue 36): the fields an
/// edit changed and its time. The server sets each of them whose own time is older, so an edit
/// of another field made on another device meanwhile is kept (field-level last write wins).
public struct CategoryPatch: Sendable, Hashable {
    /// The category's id.
    public var id: UUID
    /// The fields the patch carries (at least one); only these are sent.
    public private(set) var fields: Set<CategoryField>
    /// The carried fields' values (the others are blank and never sent).
    public private(set) var values: CategoryWrite
    /// When the user made the change on the device.
    public var updatedAt: Date? {
        get { values.updatedAt }
        set { values.updatedAt = newValue }
    }

    /// A patch of `fields` of `write` (its id and time too); the other values are blanked.
    public init(_ write: CategoryWrite, fields: Set<CategoryField>) {
        id = write.id
        self.fields = fields
        values = CategoryWrite(id: write.id, name: "", updatedAt: write.updatedAt)
        for field in fields { values.take(field, from: write) }
    }

    /// This patch without `dropped` (set again by a later pending edit).
    func removing(_ dropped: Set<CategoryField>) -> CategoryPatch {
        CategoryPatch(values, fields: fields.subtracting(dropped))
    }
}

extension CategoryPatch: Codable {
    /// Decodes a patch from the fields present in `data` (`icon: null` clears the icon).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CategoryWrite.CodingKeys.self)
        var write = CategoryWrite(id: try container.decode(UUID.self, forKey: .id), name: "")
        write.updatedAt = try container.decodeIfPresent(Date.self, forKey: .updatedAt)
        var fields: Set<CategoryField> = []
        if container.contains(.name) {
            write.name = try container.decode(String.self, forKey: .name)
            fields.insert(.name)
        }
        if container.contains(.icon) {
            write.icon = try container.decodeIfPresent(String.self, forKey: .icon)
            fields.insert(.icon)
        }
        self.init(write, fields: fields)
    }

    /// Encodes `id`, `updated_at` (when set) and the carried fields only.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CategoryWrite.CodingKeys.self)
        try container.encode(id, forKey: .id)
        if fields.contains(.name) { try container.encode(values.name, forKey: .name) }
        if fields.contains(.icon) { try container.encode(values.icon, forKey: .icon) }
        try container.encodeIfPresent(updatedAt, forKey: .updatedAt)
    }
}

/// The body of a partial write of a location (push `"action": "patch"`, issue 36): the fields an
/// edit changed and its time. `latitude` and `longitude` are one field (``LocationField/coordinates``).
public struct LocationPatch: Sendable, Hashable {
    /// The location's id.
    public var id: UUID
    /// The fields the patch carries (at least one); only these are sent.
    public private(set) var fields: Set<LocationField>
    /// The carried fields' values (the others are blank and never sent).
    public private(set) var values: LocationWrite
    /// When the user made the change on the device.
    public var updatedAt: Date? {
        get { values.updatedAt }
        set { values.updatedAt = newValue }
    }

    /// A patch of `fields` of `write` (its id and time too); the other values are blanked.
    public init(_ write: LocationWrite, fields: Set<LocationField>) {
        id = write.id
        self.fields = fields
        values = LocationPatch.blank(id: write.id, updatedAt: write.updatedAt)
        for field in fields { values.take(field, from: write) }
    }

    /// This patch with the image list `imageURLs` (when it carries the list).
    func with(imageURLs: [String]) -> LocationPatch {
        var write = values
        write.imageURLs = imageURLs
        return LocationPatch(write, fields: fields)
    }

    /// This patch without `dropped` (set again by a later pending edit).
    func removing(_ dropped: Set<LocationField>) -> LocationPatch {
        LocationPatch(values, fields: fields.subtracting(dropped))
    }

    private static func blank(id: UUID, updatedAt: Date?) -> LocationWrite {
        LocationWrite(id: id, categoryID: id, name: "", latitude: 0, longitude: 0, updatedAt: updatedAt)
    }
}

extension LocationPatch: Codable {
    /// Decodes a patch from the fields present in `data` (`null` clears an optional field;
    /// `latitude` and `longitude` come together).
    public init(from decoder: any Decoder) throws {
        typealias Key = LocationWrite.CodingKeys
        let container = try decoder.container(keyedBy: Key.self)
        var write = LocationPatch.blank(
            id: try container.decode(UUID.self, forKey: .id), updatedAt: try container.decodeIfPresent(Date.self, forKey: .updatedAt))
        var fields: Set<LocationField> = []
        if container.contains(.categoryID) {
            write.categoryID = try container.decode(UUID.self, forKey: .categoryID)
            fields.insert(.categoryID)
        }
        if container.contains(.name) {
            write.name = try container.decode(String.self, forKey: .name)
            fields.insert(.name)
        }
        if container.contains(.address) {
            write.address = try container.decodeIfPresent(String.self, forKey: .address)
            fields.insert(.address)
        }
        if container.contains(.description) {
            write.description = try container.decodeIfPresent(String.self, forKey: .description)
            fields.insert(.description)
        }
        if container.contains(.latitude) || container.contains(.longitude) {
            write.latitude = try container.decode(Double.self, forKey: .latitude)
            write.longitude = try container.decode(Double.self, forKey: .longitude)
            fields.insert(.coordinates)
        }
        if container.contains(.isFavorite) {
            write.isFavorite = try container.decode(Bool.self, forKey: .isFavorite)
            fields.insert(.isFavorite)
        }
        if container.contains(.imageURLs) {
            write.imageURLs = try container.decode([String].self, forKey: .imageURLs)
            fields.insert(.imageURLs)
        }
        self.init(write, fields: fields)
    }

    /// Encodes `id`, `updated_at` (when set) and the carried fields only (`null` clears).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: LocationWrite.CodingKeys.self)
        try container.encode(id, forKey: .id)
        for field in LocationField.allCases where fields.contains(field) {
            switch field {
            case .categoryID: try container.encode(values.categoryID, forKey: .categoryID)
            case .name: try container.encode(values.name, forKey: .name)
            case .address: try container.encode(values.address, forKey: .address)
            case .description: try container.encode(values.description, forKey: .description)
            case .coordinates:
                try container.encode(values.latitude, forKey: .latitude)
                try container.encode(values.longitude, forKey: .longitude)
            case .isFavorite: try container.encode(values.isFavorite, forKey: .isFavorite)
            case .imageURLs: try container.encode(values.imageURLs, forKey: .imageURLs)
            }
        }
        try container.encodeIfPresent(updatedAt, forKey: .updatedAt)
    }
}

extension CategoryWrite {
    /// The whole of `category` as a write made at `at`.
    init(_ category: Category, at: Date?) {
        self.init(id: category.id, name: category.name, icon: category.icon, createdAt: category.createdAt, updatedAt: at)
    }
}

extension LocationWrite {
    /// The whole of `location` as a write made at `at`.
    init(_ location: Location, at: Date?) {
        self.init(
            id: location.id, categoryID: location.categoryID, name: location.name, address: location.address,
            description: location.description, latitude: location.latitude, longitude: location.longitude,
            isFavorite: location.isFavorite, imageURLs: location.imageURLs, createdAt: location.createdAt, updatedAt: at)
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
    /// The fields of a category one edit changed (issue 36).
    case patchCategory(CategoryPatch)
    /// The fields of a location one edit changed (issue 36).
    case patchLocation(LocationPatch)

    /// `create`, `update`, `patch` or `delete`.
    public enum Action: String, Codable, Sendable, Hashable {
        case create, update, patch, delete
    }

    /// Whether the change is about a category or a location (`type` in the message).
    public var kind: RecordKind {
        switch self {
        case .createCategory, .updateCategory, .deleteCategory, .patchCategory: return .category
        case .createLocation, .updateLocation, .deleteLocation, .patchLocation: return .location
        }
    }

    /// Whether the change creates, updates or deletes (`action` in the message).
    public var action: Action {
        switch self {
        case .createCategory, .createLocation: return .create
        case .updateCategory, .updateLocation: return .update
        case .patchCategory, .patchLocation: return .patch
        case .deleteCategory, .deleteLocation: return .delete
        }
    }

    /// The record the change is about.
    public var recordID: UUID {
        switch self {
        case .createCategory(let write), .updateCategory(let write): return write.id
        case .createLocation(let write), .updateLocation(let write): return write.id
        case .deleteCategory(let write), .deleteLocation(let write): return write.id
        case .patchCategory(let patch): return patch.id
        case .patchLocation(let patch): return patch.id
        }
    }

    /// The device time the change carries.
    public var updatedAt: Date? {
        switch self {
        case .createCategory(let write), .updateCategory(let write): return write.updatedAt
        case .createLocation(let write), .updateLocation(let write): return write.updatedAt
        case .deleteCategory(let write), .deleteLocation(let write): return write.updatedAt
        case .patchCategory(let patch): return patch.updatedAt
        case .patchLocation(let patch): return patch.updatedAt
        }
    }

    /// The group the server applies it in (openapi.yaml): category creates and updates (0), then
    /// location changes (1), then category deletes (2).
    public var applicationGroup: Int {
        switch self {
        case .createCategory, .updateCategory, .patchCategory: return 0
        case .createLocation, .updateLocation, .patchLocation, .deleteLocation: return 1
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
        case (.category, .patch): self = .patchCategory(try container.decode(CategoryPatch.self, forKey: .data))
        case (.category, .delete): self = .deleteCategory(try container.decode(DeleteWrite.self, forKey: .data))
        case (.location, .create): self = .createLocation(try container.decode(LocationWrite.self, forKey: .data))
        case (.location, .update): self = .updateLocation(try container.decode(LocationWrite.self, forKey: .data))
        case (.location, .patch): self = .patchLocation(try container.decode(LocationPatch.self, forKey: .data))
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
        case .patchCategory(let patch): try container.encode(patch, forKey: .data)
        case .patchLocation(let patch): try container.encode(patch, forKey: .data)
        }
    }
}
