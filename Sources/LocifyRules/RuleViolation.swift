/// A write the shared rules refuse, with the error code and message the server answers it with,
/// so a client can refuse the same edit at once instead of queueing a change that must fail.
public enum RuleViolation: Error, Sendable, Hashable {
    /// E001: `field` breaks its rule; `reason` says how ("must not be empty").
    case invalidInput(field: String, reason: String)
    /// E003: a coordinate out of range.
    case invalidCoordinates(field: String, reason: String)
    /// E007: the record a write refers to (`"category"`) is not one of the user's live records.
    case notFound(String)

    /// The API error code the server answers this refusal with.
    public var code: ErrorCode {
        switch self {
        case .invalidInput: .invalidInput
        case .invalidCoordinates: .invalidCoordinates
        case .notFound: .notFound
        }
    }

    /// The field at fault, as the API names it, when there is one.
    public var field: String? {
        switch self {
        case .invalidInput(let field, _), .invalidCoordinates(let field, _): field
        case .notFound: nil
        }
    }

    /// The error's `message`, word for word as the server writes it.
    public var message: String {
        switch self {
        case .invalidInput(let field, let reason), .invalidCoordinates(let field, let reason):
            Self.message(field: field, reason: reason)
        case .notFound(let what): Self.message(notFound: what)
        }
    }

    /// E007 for a `category_id` or `reassign_category_id` that names no live category of the user.
    public static let unknownCategory = RuleViolation.notFound("category")

    /// The message of a field-level error: the field, a space, the reason ("name must not be empty").
    public static func message(field: String, reason: String) -> String { "\(field) \(reason)" }

    /// The message of an E007 about a record: "category not found".
    public static func message(notFound what: String) -> String { "\(what) not found" }
}
