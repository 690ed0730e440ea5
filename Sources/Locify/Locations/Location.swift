import FoundationEssentials
import LocifyRules
import Primitives

/// A user's saved place as stored: the live record or, when `deletedAt` is set, its tombstone.
public struct Location: Sendable, Equatable {
    /// The client-chosen id.
    public var id: UUID
    /// The category the location belongs to.
    public var categoryID: UUID
    /// The display name.
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
    /// Firebase Storage URLs of its photos, in the client's order.
    public var imageURLs: [String]
    /// Bumped by every applied write; a client-visible change counter.
    public var version: Int64
    /// When the record was first created (client time, clamped).
    public var createdAt: Timestamp
    /// The last write's time; last-write-wins compares it.
    public var updatedAt: Timestamp
    /// When it was deleted; nil for a live record.
    public var deletedAt: Timestamp?
    /// The category its own last write named, when that is not `categoryID`: the category was
    /// deleted with a reassign and the location is shown in the target (openapi.yaml).
    var placedCategoryID: UUID?
    /// Whether it is shown deleted only because its category is deleted with a cascade (its own
    /// last write is not a delete; it comes back with the category).
    var isHiddenWithCategory = false
    /// Each field's stamp as stored (`field_stamps`, migrations/0009); nil when every field stands
    /// at `updatedAt` (a record written whole, or built in code).
    var storedFieldStamps: [Int64]?

    /// The category the location's own last write named.
    var ownCategoryID: UUID { placedCategoryID ?? categoryID }

    /// Each field's stamp and its own tombstone (none while it is only hidden with its category):
    /// what last write wins decides a write of it against (`FieldLastWriteWins`), and what the
    /// change feed reports as `field_updated_at`.
    public var fieldClock: FieldLastWriteWins<LocationField>.Clock {
        FieldLastWriteWins.Clock(
            stampsOf: storedFieldStamps, updatedAt: updatedAt, deletedAt: isHiddenWithCategory ? nil : deletedAt)
    }

    /// A location with every stored column.
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
