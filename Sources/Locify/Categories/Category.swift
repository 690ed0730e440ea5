import FoundationEssentials
import LocifyRules
import Primitives

/// A user's category as stored: the live record or, when `deletedAt` is set, its tombstone.
public struct Category: Sendable, Equatable {
    /// The client-chosen id.
    public var id: UUID
    /// The display name.
    public var name: String
    /// The icon's Firebase Storage URL, if any.
    public var icon: String?
    /// How many live locations the category holds.
    public var locationCount: Int64
    /// Bumped by every applied write; a client-visible change counter.
    public var version: Int64
    /// When the record was first created (client time, clamped).
    public var createdAt: Timestamp
    /// The last write's time; last-write-wins compares it.
    public var updatedAt: Timestamp
    /// When it was deleted; nil for a live record.
    public var deletedAt: Timestamp?
    /// Each field's stamp as stored (`field_stamps`, migrations/0009); nil when every field stands
    /// at `updatedAt` (a record written whole, or built in code).
    var storedFieldStamps: [Int64]?

    /// A category with every stored column.
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

    /// Each field's stamp and the tombstone: what last write wins decides a write of it against
    /// (`FieldLastWriteWins`), and what the change feed reports as `field_updated_at`.
    public var fieldClock: FieldLastWriteWins<CategoryField>.Clock {
        FieldLastWriteWins.Clock(stampsOf: storedFieldStamps, updatedAt: updatedAt, deletedAt: deletedAt)
    }

    /// True exactly for the four server-provisioned default ids (openapi.yaml).
    public var isDefault: Bool { DefaultCategories.isDefault(id) }
}
