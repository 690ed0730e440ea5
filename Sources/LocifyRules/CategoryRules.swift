/// The rules of a category write (openapi.yaml), each refusing with the code and message the
/// server answers: the server's drafts and a client's edits go through these same functions.
public enum CategoryRules {
    /// Trimmed of Unicode whitespace, then 1-255 code points without control characters.
    /// Returns the trimmed name. Idempotent.
    public static func name(_ raw: String) throws(RuleViolation) -> String {
        try TextRules.name(raw, field: "name")
    }

    /// An absolute https URL of at most 2048 code points. Returned unchanged.
    public static func icon(_ raw: String) throws(RuleViolation) -> String {
        try TextRules.httpsURL(raw, field: "icon")
    }

    /// A delete's `reassign_category_id` must not be the category being deleted (E001). Checked
    /// before `checkReassignTarget(isKnown:)`.
    public static func checkReassignTarget<ID: Equatable>(_ target: ID, deleting deleted: ID) throws(RuleViolation) {
        if target == deleted {
            throw .invalidInput(field: "reassign_category_id", reason: "must not be the category being deleted")
        }
    }

    /// A delete's `reassign_category_id` must name a category the user has or had (E007 when it
    /// never existed); a deleted one is accepted, its locations then follow that category's state
    /// (openapi.yaml, "Writes in any order").
    public static func checkReassignTarget(isKnown: Bool) throws(RuleViolation) {
        if !isKnown { throw .unknownCategory }
    }
}

/// The editable fields of a category write, validated and normalised by `CategoryRules`.
public struct CategoryFields: Sendable, Hashable {
    /// Trimmed, 1-255 code points, no control characters.
    public let name: String
    /// An absolute https URL, or none.
    public let icon: String?

    /// Validates `name`, then `icon`; the first broken rule is thrown.
    public init(name: String, icon: String?) throws(RuleViolation) {
        self.name = try CategoryRules.name(name)
        if let icon { self.icon = try CategoryRules.icon(icon) } else { self.icon = nil }
    }
}
