import FoundationEssentials
import Primitives

/// A validated category write (create, upsert or replace), normalised. Every draft passes the
/// rules of openapi.yaml when it is built, whoever builds it (the JSON layer or code).
public struct CategoryDraft: Sendable, Equatable {
    /// The client-chosen id.
    public private(set) var id: UUID
    /// Trimmed, 1-255 code points, no control characters.
    public private(set) var name: String
    /// An absolute https URL.
    public private(set) var icon: String?
    /// Sent `created_at` (create only), not yet clamped.
    public private(set) var createdAt: Timestamp?
    /// Sent `updated_at`, not yet clamped.
    public private(set) var updatedAt: Timestamp?

    /// Validates and normalises a write: the name is trimmed; a name or icon that breaks its rule
    /// is `LocifyError.invalidInput` (E001) naming the field.
    public init(id: UUID, name: String, icon: String? = nil, createdAt: Timestamp? = nil, updatedAt: Timestamp? = nil)
        throws(LocifyError)
    {
        self.id = id
        self.name = try Self.validName(name)
        self.icon = try icon.map { (icon) throws(LocifyError) in try Self.validIcon(icon) }
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// The name rule: trimmed of Unicode whitespace, then 1-255 code points without control
    /// characters. Returns the trimmed name. Idempotent.
    public static func validName(_ raw: String) throws(LocifyError) -> String {
        try TextRules.name(raw, field: "name")
    }

    /// The icon rule: an absolute https URL of at most 2048 code points. Returned unchanged.
    public static func validIcon(_ raw: String) throws(LocifyError) -> String {
        try TextRules.httpsURL(raw, field: "icon")
    }

    /// Whether this write carries the same editable content as `stored` (idempotent replay test).
    public func hasSameContent(as stored: Category) -> Bool {
        name == stored.name && icon == stored.icon
    }
}
