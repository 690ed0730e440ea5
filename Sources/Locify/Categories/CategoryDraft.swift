import FoundationEssentials
import LocifyRules
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

    /// Validates and normalises a write with the shared rules (`CategoryFields`): the name is
    /// trimmed; a name or icon that breaks its rule is `LocifyError.invalidInput` (E001) naming
    /// the field.
    public init(id: UUID, name: String, icon: String? = nil, createdAt: Timestamp? = nil, updatedAt: Timestamp? = nil)
        throws(LocifyError)
    {
        let fields: CategoryFields
        do throws(RuleViolation) {
            fields = try CategoryFields(name: name, icon: icon)
        } catch {
            throw LocifyError(error)
        }
        self.id = id
        self.name = fields.name
        self.icon = fields.icon
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// Whether this write carries the same editable content as `stored` (idempotent replay test).
    public func hasSameContent(as stored: Category) -> Bool {
        name == stored.name && icon == stored.icon
    }
}
