/// The rule of a profile write (`PUT /v1/users/me`, openapi.yaml), refusing with the code and
/// message the server answers, like the record rules.
public enum ProfileRules {
    /// The user's `name`: trimmed of Unicode whitespace, then 1-255 code points without control
    /// characters. Returns the trimmed name.
    public static func name(_ raw: String) throws(RuleViolation) -> String {
        try TextRules.name(raw, field: "name")
    }
}
