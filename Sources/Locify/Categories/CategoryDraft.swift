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

    /// The write as a patch of every field.
    public var patch: CategoryPatch { CategoryPatch(whole: self) }
}

/// A validated write of some fields of a category (`PATCH`, push `patch`; issue 36), normalised:
/// each field it carries passes the rule it passes in a whole write. Carries at least one field.
public struct CategoryPatch: Sendable, Equatable {
    /// The client-chosen id.
    public private(set) var id: UUID
    /// Sent `updated_at`, not yet clamped.
    public private(set) var updatedAt: Timestamp?
    /// The fields it carries.
    public private(set) var fields: Set<CategoryField>
    /// The name, when carried.
    public private(set) var name: String?
    /// The icon, when carried (nil clears it).
    public private(set) var icon: String?

    /// Validates and normalises the fields sent (nil: not carried; `.some(nil)`: cleared) with the
    /// rules of a whole write (`CategoryRules`); a patch without a field is E001.
    public init(id: UUID, name: String? = nil, icon: String?? = nil, updatedAt: Timestamp? = nil) throws(LocifyError) {
        self.id = id
        self.updatedAt = updatedAt
        fields = []
        if let name {
            self.name = try LocifyError.applying(CategoryRules.name, to: name)
            fields.insert(.name)
        }
        if let icon {
            self.icon = try icon.map { (icon) throws(LocifyError) in try LocifyError.applying(CategoryRules.icon, to: icon) }
            fields.insert(.icon)
        }
        if fields.isEmpty { throw LocifyError.emptyPatch }
    }

    fileprivate init(whole draft: CategoryDraft) {
        id = draft.id
        updatedAt = draft.updatedAt
        fields = Set(CategoryField.allCases)
        name = draft.name
        icon = draft.icon
    }

    /// Whether its value of `field` (which it carries) equals `stored`'s.
    public func hasSameValue(_ field: CategoryField, as stored: Category) -> Bool {
        switch field {
        case .name: name == stored.name
        case .icon: icon == stored.icon
        }
    }
}
