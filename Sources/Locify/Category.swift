import Foundation

/// A user's category as stored: the live record or, when `deletedAt` is set, its tombstone.
public struct Category: Sendable, Equatable {
    public var id: UUID
    public var name: String
    public var icon: String?
    public var locationCount: Int64
    public var version: Int64
    public var createdAt: Timestamp
    public var updatedAt: Timestamp
    public var deletedAt: Timestamp?

    public init(
        id: UUID, name: String, icon: String?, locationCount: Int64, version: Int64,
        createdAt: Timestamp, updatedAt: Timestamp, deletedAt: Timestamp?
    ) {
        self.id = id
        self.name = name
        self.icon = icon
        self.locationCount = locationCount
        self.version = version
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.deletedAt = deletedAt
    }

    /// True exactly for the four server-provisioned default ids (API.md section 11).
    public var isDefault: Bool { DefaultCategories.isDefault(id) }
}
