import FoundationEssentials
import LocifyRules
import Primitives

/// One field-level problem: which field and what is wrong with it.
public struct FieldIssue: Sendable, Equatable {
    /// The field's name as the client sent it (`name`, `changes[3].data.id`, ...).
    public var field: String
    /// What is wrong with it, for a human.
    public var message: String

    /// A problem `message` with field `field`.
    public init(field: String, message: String) {
        self.field = field
        self.message = message
    }
}

/// A record as the server holds it: the live record, or the tombstone when it was deleted. A
/// losing write is shown it (openapi.yaml); sync push results carry it.
public enum RecordState: Sendable, Equatable {
    case category(Category)
    case location(Location)
    case tombstone(RecordKind, id: UUID, deletedAt: Timestamp)
}

/// Every way the domain refuses a request: outcomes of the domain only (what cannot be read off
/// the wire, a malformed UUID or an absent field, is `LocifyAPI`'s `RequestDecodingError`). Each
/// case corresponds to exactly one API error code; `LocifyAPI` renders them (`APIError`, the one
/// place that maps errors to HTTP statuses).
public enum LocifyError: Error, Sendable, Equatable {
    /// E001: malformed or out-of-rule input.
    case invalidInput(FieldIssue)
    /// E003: latitude or longitude out of range.
    case invalidCoordinates(FieldIssue)
    /// E005: the token is valid but predates the account's deletion.
    case tokenRevoked
    /// E007: no such record of this kind for this user (another user's record looks exactly like
    /// this); the API names the kind in its message.
    case notFound(RecordKind)
    /// E008: the write is older than the stored record; carries the server's version.
    case conflict(RecordState)
    /// E009: the sync cursor is older than the tombstone retention.
    case cursorExpired
    /// E001: a sync push carries more changes than the server takes (`limit`); nothing is applied.
    case tooManyChanges(limit: Int)

    /// A field-level E001.
    package static func invalid(_ field: String, _ message: String) -> LocifyError {
        .invalidInput(FieldIssue(field: field, message: message))
    }

    /// E001: a patch that carries no field (openapi.yaml, `PATCH`).
    package static var emptyPatch: LocifyError { .invalid("body", "must carry at least one field to change") }

    /// The domain error of a shared rule's refusal (same code, field and message).
    public init(_ violation: RuleViolation) {
        switch violation {
        case .invalidInput(let field, let reason): self = .invalid(field, reason)
        case .invalidCoordinates(let field, let reason): self = .invalidCoordinates(FieldIssue(field: field, message: reason))
        // The one record the shared rules find missing is the category a write names
        // (`RuleViolation.unknownCategory`).
        case .notFound: self = .notFound(.category)
        }
    }

    /// Applies a shared rule (`LocifyRules`) to `value`; a refusal becomes the domain's error.
    package static func applying<Value, Result>(
        _ rule: (Value) throws(RuleViolation) -> Result, to value: Value
    ) throws(LocifyError) -> Result {
        do throws(RuleViolation) {
            return try rule(value)
        } catch {
            throw LocifyError(error)
        }
    }
}
