import Foundation
import LocifyRules

/// `Category` under a name no other module uses: on Apple platforms the Objective-C runtime also
/// declares a `Category`, which makes the plain name ambiguous in a file importing Foundation
/// (`LocifyClient.Category` works too).
public typealias LocifyCategory = Category

/// `Location` under a prefixed name, for symmetry with ``LocifyCategory``.
public typealias LocifyLocation = Location

/// A category as the server stores it (and as the local store keeps it). Records made on this
/// device and not yet pushed have `version` 0 and no `userID`.
public struct Category: Codable, Sendable, Hashable, Identifiable {
    /// The client-chosen id, sent on create; the four default categories have deterministic UUIDv5
    /// ids, the same on every device.
    public var id: UUID
    /// The owner (the token's `sub`); nil for a record not yet pushed.
    public var userID: String?
    /// Trimmed, 1-255 characters, no control characters (the server refuses others with E001).
    public var name: String
    /// An absolute `https` URL, or nil.
    public var icon: String?
    /// True for the four default categories the server provisions.
    public var isDefault: Bool
    /// Live locations in this category when the server last sent it (``SyncEngine/categories()``
    /// recounts from the local store).
    public var locationCount: Int
    /// The server's version: 1 on creation, +1 on every accepted write; 0 before the first push.
    public var version: Int
    /// When the record was created; sent on create (clamped to the server's clock), ignored on update.
    public var createdAt: Date
    /// When the user made the change on a device: the last-write-wins clock.
    public var updatedAt: Date

    /// A category with every field given; for a new one leave `userID` nil and `version` 0, and set
    /// `updatedAt` to the moment of the edit (the last-write-wins clock).
    public init(
        id: UUID, userID: String? = nil, name: String, icon: String? = nil, isDefault: Bool = false,
        locationCount: Int = 0, version: Int = 0, createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.userID = userID
        self.name = name
        self.icon = icon
        self.isDefault = isDefault
        self.locationCount = locationCount
        self.version = version
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    enum CodingKeys: String, CodingKey {
        case id, name, icon, version
        case userID = "user_id"
        case isDefault = "is_default"
        case locationCount = "location_count"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }

    /// Decodes the server's JSON; absent `is_default`, `location_count` and `version` read as false, 0, 0.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(UUID.self, forKey: .id)
        userID = try container.decodeIfPresent(String.self, forKey: .userID)
        name = try container.decode(String.self, forKey: .name)
        icon = try container.decodeIfPresent(String.self, forKey: .icon)
        isDefault = try container.decodeIfPresent(Bool.self, forKey: .isDefault) ?? false
        locationCount = try container.decodeIfPresent(Int.self, forKey: .locationCount) ?? 0
        version = try container.decodeIfPresent(Int.self, forKey: .version) ?? 0
        createdAt = try container.decode(Date.self, forKey: .createdAt)
        updatedAt = try container.decode(Date.self, forKey: .updatedAt)
    }
}

/// A location as the server stores it (and as the local store keeps it).
public struct Location: Codable, Sendable, Hashable, Identifiable {
    /// The client-chosen id, sent on create.
    public var id: UUID
    /// The owner (the token's `sub`); nil for a record not yet pushed.
    public var userID: String?
    /// The category the location belongs to: one of the user's live categories, else the write fails with E007.
    public var categoryID: UUID
    /// Trimmed, 1-255 characters, no control characters.
    public var name: String
    /// At most 1000 characters; empty or blank text is stored as nil.
    public var address: String?
    /// At most 1000 characters; empty or blank text is stored as nil.
    public var description: String?
    /// Degrees in [-90, 90] (outside: E003).
    public var latitude: Double
    /// Degrees in [-180, 180] (outside: E003).
    public var longitude: Double
    /// Whether the user marked the location as a favourite.
    public var isFavorite: Bool
    /// At most 10 distinct absolute `https` URLs.
    public var imageURLs: [String]
    /// The server's version; 0 before the first push.
    public var version: Int
    /// When the record was created; sent on create (clamped to the server's clock), ignored on update.
    public var createdAt: Date
    /// When the user made the change on a device: the last-write-wins clock.
    public var updatedAt: Date

    /// A location with every field given; for a new one leave `userID` nil and `version` 0, and set
    /// `updatedAt` to the moment of the edit (the last-write-wins clock).
    public init(
        id: UUID, userID: String? = nil, categoryID: UUID, name: String, address: String? = nil,
        description: String? = nil, latitude: Double, longitude: Double, isFavorite: Bool = false,
        imageURLs: [String] = [], version: Int = 0, createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.userID = userID
        self.categoryID = categoryID
        self.name = name
        self.address = address
        self.description = description
        self.latitude = latitude
        self.longitude = longitude
        self.isFavorite = isFavorite
        self.imageURLs = imageURLs
        self.version = version
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    enum CodingKeys: String, CodingKey {
        case id, name, address, description, latitude, longitude, version
        case userID = "user_id"
        case categoryID = "category_id"
        case isFavorite = "is_favorite"
        case imageURLs = "image_urls"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }

    /// Decodes the server's JSON; absent optional fields read as their defaults (`image_urls` as []).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(UUID.self, forKey: .id)
        userID = try container.decodeIfPresent(String.self, forKey: .userID)
        categoryID = try container.decode(UUID.self, forKey: .categoryID)
        name = try container.decode(String.self, forKey: .name)
        address = try container.decodeIfPresent(String.self, forKey: .address)
        description = try container.decodeIfPresent(String.self, forKey: .description)
        latitude = try container.decode(Double.self, forKey: .latitude)
        longitude = try container.decode(Double.self, forKey: .longitude)
        isFavorite = try container.decodeIfPresent(Bool.self, forKey: .isFavorite) ?? false
        imageURLs = try container.decodeIfPresent([String].self, forKey: .imageURLs) ?? []
        version = try container.decodeIfPresent(Int.self, forKey: .version) ?? 0
        createdAt = try container.decode(Date.self, forKey: .createdAt)
        updatedAt = try container.decode(Date.self, forKey: .updatedAt)
    }
}

/// What remains of a deleted record (`{"id", "deleted": true, "deleted_at"}`).
public struct Tombstone: Codable, Sendable, Hashable {
    /// The id of the deleted record.
    public var id: UUID
    /// When the record was deleted: the tombstone's last-write-wins clock.
    public var deletedAt: Date

    /// A tombstone of record `id`, deleted at `deletedAt`.
    public init(id: UUID, deletedAt: Date) {
        self.id = id
        self.deletedAt = deletedAt
    }

    enum CodingKeys: String, CodingKey {
        case id, deleted
        case deletedAt = "deleted_at"
    }

    /// Decodes `id` and `deleted_at`; `deleted` is not checked here (decoding a `RecordState` checks it).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(UUID.self, forKey: .id)
        deletedAt = try container.decode(Date.self, forKey: .deletedAt)
    }

    /// Encodes the server's form, `{"id", "deleted": true, "deleted_at"}`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(true, forKey: .deleted)
        try container.encode(deletedAt, forKey: .deletedAt)
    }
}

/// The two kinds of records the user owns (`type` in sync messages).
public enum RecordKind: String, Codable, Sendable, Hashable, CaseIterable {
    case category
    case location
}

/// The server's state of one record: live, or a tombstone. E008 carries one, as do push results.
public enum RecordState: Sendable, Hashable {
    case category(Category)
    case location(Location)
    case tombstone(RecordKind, Tombstone)

    /// The record's id, live or deleted.
    public var id: UUID {
        switch self {
        case .category(let category): return category.id
        case .location(let location): return location.id
        case .tombstone(_, let tombstone): return tombstone.id
        }
    }

    /// Whether the record is a category or a location, live or deleted.
    public var kind: RecordKind {
        switch self {
        case .category: return .category
        case .location: return .location
        case .tombstone(let kind, _): return kind
        }
    }

    /// The record's last-write-wins clock (`updated_at`, or `deleted_at` for a tombstone).
    public var updatedAt: Date {
        switch self {
        case .category(let category): return category.updatedAt
        case .location(let location): return location.updatedAt
        case .tombstone(_, let tombstone): return tombstone.deletedAt
        }
    }

    /// Decodes a record or tombstone of `kind` from JSON data.
    static func decode(_ kind: RecordKind, from data: Data) throws -> RecordState {
        switch kind {
        case .category: return try JSONCoding.decoder.decode(CategoryOrTombstone.self, from: data).state
        case .location: return try JSONCoding.decoder.decode(LocationOrTombstone.self, from: data).state
        }
    }
}

/// A category or its tombstone, told apart by `"deleted": true`.
struct CategoryOrTombstone: Decodable, Sendable {
    var state: RecordState

    init(from decoder: any Decoder) throws {
        state = try RecordState.decodeTombstone(.category, decoder) ?? .category(try Category(from: decoder))
    }
}

/// A location or its tombstone, told apart by `"deleted": true`.
struct LocationOrTombstone: Decodable, Sendable {
    var state: RecordState

    init(from decoder: any Decoder) throws {
        state = try RecordState.decodeTombstone(.location, decoder) ?? .location(try Location(from: decoder))
    }
}

extension RecordState {
    /// The tombstone `decoder` holds, or nil when it holds a live record.
    static func decodeTombstone(_ kind: RecordKind, _ decoder: any Decoder) throws -> RecordState? {
        let container = try decoder.container(keyedBy: Tombstone.CodingKeys.self)
        guard try container.decodeIfPresent(Bool.self, forKey: .deleted) == true else { return nil }
        return .tombstone(kind, try Tombstone(from: decoder))
    }
}

/// The user's profile (`GET /v1/users/me`).
public struct UserProfile: Codable, Sendable, Hashable {
    /// The user's id: the Firebase token's `sub`.
    public var id: String
    /// The email of the token that created the user, if it had one.
    public var email: String?
    /// The display name: from the token at first, then as set by `PUT /v1/users/me`.
    public var name: String?
    /// When the server first saw the user.
    public var createdAt: Date
    /// When the profile last changed.
    public var updatedAt: Date

    enum CodingKeys: String, CodingKey {
        case id, email, name
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }
}

/// The limits a client must respect (`GET /v1/info`).
public struct ServerInfo: Codable, Sendable, Hashable {
    /// Most changes in one push (50 by default).
    public var maxPushChanges: Int
    /// Largest `size` of a listing page.
    public var maxPageSize: Int
    /// Largest `limit` of a pull.
    public var maxPullLimit: Int
    /// Largest request body, in bytes.
    public var maxBodyBytes: Int
    /// How long tombstones (and sync cursors) live, in seconds.
    public var tombstoneRetentionSeconds: Int
    /// The longest `wait` of a long-poll pull, in seconds; 0 when the server does not hold pulls
    /// (or predates long-poll): live mode then polls.
    public var maxWaitSeconds: Int

    /// Limits with the given values, e.g. for tests or previews (the client decodes the server's from `GET /v1/info`).
    public init(
        maxPushChanges: Int, maxPageSize: Int, maxPullLimit: Int, maxBodyBytes: Int, tombstoneRetentionSeconds: Int,
        maxWaitSeconds: Int = 0
    ) {
        self.maxPushChanges = maxPushChanges
        self.maxPageSize = maxPageSize
        self.maxPullLimit = maxPullLimit
        self.maxBodyBytes = maxBodyBytes
        self.tombstoneRetentionSeconds = tombstoneRetentionSeconds
        self.maxWaitSeconds = maxWaitSeconds
    }

    /// Decodes `/v1/info`; `max_wait_seconds` may be missing (a server without long-poll): 0.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        maxPushChanges = try container.decode(Int.self, forKey: .maxPushChanges)
        maxPageSize = try container.decode(Int.self, forKey: .maxPageSize)
        maxPullLimit = try container.decode(Int.self, forKey: .maxPullLimit)
        maxBodyBytes = try container.decode(Int.self, forKey: .maxBodyBytes)
        tombstoneRetentionSeconds = try container.decode(Int.self, forKey: .tombstoneRetentionSeconds)
        maxWaitSeconds = try container.decodeIfPresent(Int.self, forKey: .maxWaitSeconds) ?? 0
    }

    enum CodingKeys: String, CodingKey {
        case maxPushChanges = "max_push_changes"
        case maxPageSize = "max_page_size"
        case maxPullLimit = "max_pull_limit"
        case maxBodyBytes = "max_body_bytes"
        case tombstoneRetentionSeconds = "tombstone_retention_seconds"
        case maxWaitSeconds = "max_wait_seconds"
    }
}

/// One page of a listing, with the server's counts.
public struct Page<Element: Decodable & Sendable>: Decodable, Sendable {
    /// The records of this page, in the listing's order.
    public var data: [Element]
    /// The counts and the page asked for.
    public var meta: Meta

    /// `meta` of a listing: `total_pages` is `ceil(total_count / size)`.
    public struct Meta: Decodable, Sendable, Hashable {
        /// Records matching the query, across all pages.
        public var totalCount: Int
        /// `ceil(totalCount / size)`: 0 when nothing matches.
        public var totalPages: Int
        /// This page's number, from 1.
        public var page: Int
        /// The page size asked for.
        public var size: Int

        enum CodingKeys: String, CodingKey {
            case page, size
            case totalCount = "total_count"
            case totalPages = "total_pages"
        }
    }
}

/// The JSON settings every message shares: RFC 3339 dates at millisecond precision.
enum JSONCoding {
    static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let timestamp = Timestamp(rfc3339: text) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an RFC 3339 date-time: \(text)")
            }
            return Date(locifyMilliseconds: timestamp.milliseconds)
        }
        return decoder
    }

    static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(date.rfc3339)
        }
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }
}
