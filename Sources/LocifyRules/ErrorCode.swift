/// The API's error codes (openapi.yaml, the error table): each code's HTTP status and meaning, one
/// table for both ends. The server answers with these (`APIError` in `LocifyAPI` is where errors
/// become answers, through this table); a client switches on them.
public enum ErrorCode: String, Sendable, Hashable, CaseIterable {
    /// E001: invalid input.
    case invalidInput = "E001"
    /// E002: a malformed UUID.
    case invalidUUID = "E002"
    /// E003: latitude or longitude out of range.
    case invalidCoordinates = "E003"
    /// E004: a required field is absent or null.
    case missingField = "E004"
    /// E005: no, or a refused, Firebase ID token.
    case unauthenticated = "E005"
    /// E006: a body `user_id` that is not the caller.
    case forbidden = "E006"
    /// E007: no such record for this user, or no such route.
    case notFound = "E007"
    /// E008: the write sets nothing: every field it carries is newer on the server, or as new with
    /// another value.
    case conflict = "E008"
    /// E009: the sync cursor outlived the tombstone retention.
    case cursorExpired = "E009"
    /// E010: the request body is too large.
    case bodyTooLarge = "E010"
    /// E011: method not allowed on the path.
    case methodNotAllowed = "E011"
    /// E012: the body is not `application/json`.
    case unsupportedMediaType = "E012"
    /// S001: rate limited.
    case rateLimited = "S001"
    /// S002: an unexpected server error.
    case internalError = "S002"
    /// S003: the server or what it depends on is unavailable for now.
    case unavailable = "S003"

    /// The HTTP status this code is answered with.
    public var httpStatus: Int {
        switch self {
        case .invalidInput, .invalidUUID, .invalidCoordinates, .missingField: 400
        case .unauthenticated: 401
        case .forbidden: 403
        case .notFound: 404
        case .methodNotAllowed: 405
        case .conflict: 409
        case .cursorExpired: 410
        case .bodyTooLarge: 413
        case .unsupportedMediaType: 415
        case .rateLimited: 429
        case .internalError: 500
        case .unavailable: 503
        }
    }

    /// What the code means, as openapi.yaml's error table says it.
    public var meaning: String {
        switch self {
        case .invalidInput:
            "invalid input (bad JSON, wrong type, too long, bad URL, bad query parameter, batch too large)"
        case .invalidUUID: "invalid UUID (path, body or query)"
        case .invalidCoordinates: "latitude outside [-90, 90] or longitude outside [-180, 180]"
        case .missingField: "a required field is absent or null"
        case .unauthenticated: "missing, malformed, expired, badly signed or revoked Firebase ID token"
        case .forbidden: "a body `user_id` that is not the token's user"
        case .notFound: "no such resource for this user, or no such route"
        case .conflict:
            "the write sets nothing: every field it carries is newer on the server, or as new with another value (`data` = the server's version)"
        case .cursorExpired: "the sync cursor is older than the tombstone retention: resync from scratch"
        case .bodyTooLarge: "request body larger than 2 MiB"
        case .methodNotAllowed: "method not allowed on this path (`Allow` lists the allowed ones)"
        case .unsupportedMediaType: "request body is not `application/json`"
        case .rateLimited: "rate limit exceeded (`Retry-After`)"
        case .internalError: "unexpected server error (never leaks internals)"
        case .unavailable:
            "database unreachable, Google's token keys unavailable, server draining, or server busy: request bodies over its memory budget or too many requests waiting (`Retry-After`)"
        }
    }
}
