import Locify
import LocifyRules

/// Why a request cannot be read: the one error type of the API layer's decoding (`FieldReader`,
/// the bodies of writes and pushed changes, query parameters, the sync cursor). The wire's own
/// problems have their cases; a decoded value the domain refuses (a shared rule, a draft's
/// initializer) keeps the domain's error. `APIError` renders every case.
package enum RequestDecodingError: Error, Sendable, Equatable {
    /// E001: not the shape the API reads (a wrong JSON type, a bad timestamp or cursor).
    case invalidInput(FieldIssue)
    /// E002: a malformed UUID.
    case invalidUUID(FieldIssue)
    /// E004: a required field is absent or null.
    case missingField(String)
    /// E006: a body `user_id` that is not the caller.
    case forbidden(FieldIssue)
    /// E001 or E003: a value the domain refuses (`LocifyError.invalidInput`, `.invalidCoordinates`).
    case refused(LocifyError)

    /// A field-level E001.
    static func invalid(_ field: String, _ message: String) -> RequestDecodingError {
        .invalidInput(FieldIssue(field: field, message: message))
    }

    /// E002 on `field`.
    static func invalidUUID(_ field: String) -> RequestDecodingError {
        .invalidUUID(FieldIssue(field: field, message: "must be a UUID"))
    }

    /// Applies a shared rule (`LocifyRules`) to a decoded value; a refusal is the domain's error
    /// (the same code, field and message as when the domain applies it).
    static func applying<Value, Result>(
        _ rule: (Value) throws(RuleViolation) -> Result, to value: Value
    ) throws(RequestDecodingError) -> Result {
        do throws(RuleViolation) {
            return try rule(value)
        } catch {
            throw .refused(LocifyError(error))
        }
    }
}
