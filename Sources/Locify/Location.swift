import Foundation

/// A user's saved place as stored: the live record or, when `deletedAt` is set, its tombstone.
public struct Location: Sendable, Equatable {
    public var id: UUID
    public var categoryID: UUID
    public var name: String
    public var address: String?
    public var description: String?
    public var latitude: Double
    public var longitude: Double
    public var isFavorite: Bool
    public var imageURLs: [String]
    public var version: Int64
    public var createdAt: Timestamp
    public var updatedAt: Timestamp
    public var deletedAt: Timestamp?

    public init(
        id: UUID, categoryID: UUID, name: String, address: String?, description: String?,
        latitude: Double, longitude: Double, isFavorite: Bool, imageURLs: [String], version: Int64,
        createdAt: Timestamp, updatedAt: Timestamp, deletedAt: Timestamp?
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
        self.version = version
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.deletedAt = deletedAt
    }
}
