import FirebaseAdmin
import HTTPServer
import JSON
import Locify
import LocifyRules
import Postgres

/// An error as the API reports it: code, status, message, optional field details and, for a
/// conflict, the server's record (openapi.yaml). This file is the one place that maps the
/// errors of every layer to error codes, and through the shared table (`ErrorCode`) to statuses.
public struct APIError: Error, Sendable {
    /// The API error code (`E001`-`E012`, `S001`-`S003`).
    public var code: ErrorCode
    /// The HTTP status the code maps to (`ErrorCode.httpStatus`).
    public var status: HTTPStatus { HTTPStatus(errorCode: code) }
    /// A human-readable message; never internal details.
    public var message: String
    /// Per-field problems, for validation errors.
    public var details: [FieldIssue]
    /// Beside `error` in a 409 body: the server's current record or tombstone.
    public var data: RecordState?
    /// Extra response headers (`Allow`, `Retry-After`, `WWW-Authenticate`).
    public var headers: HTTPHeaders

    /// An error with every part given; its status is the code's.
    public init(
        _ code: ErrorCode, message: String, details: [FieldIssue] = [], data: RecordState? = nil, headers: HTTPHeaders = [:]
    ) {
        self.code = code
        self.message = message
        self.details = details
        self.data = data
        self.headers = headers
    }

    // MARK: The error table of openapi.yaml

    /// E005 with the challenge of RFC 6750: bare `Bearer` when no credentials came,
    /// `error="invalid_token"` when they were refused. The message is the same for every reason.
    static func unauthenticated(credentialsSent: Bool) -> APIError {
        APIError(
            .unauthenticated, message: "missing or invalid Firebase ID token",
            headers: ["WWW-Authenticate": credentialsSent ? "Bearer error=\"invalid_token\"" : "Bearer"])
    }

    static let routeNotFound = APIError(.notFound, message: "no such route")

    static func methodNotAllowed(_ allowed: [HTTPMethod]) -> APIError {
        APIError(
            .methodNotAllowed, message: "method not allowed on this path",
            headers: ["Allow": allowed.map(\.rawValue).joined(separator: ", ")])
    }

    static let bodyTooLarge = APIError(.bodyTooLarge, message: "request body too large")

    static let unsupportedMediaType = APIError(.unsupportedMediaType, message: "request body must be application/json")

    static func rateLimited(retryAfterSeconds: Int) -> APIError {
        APIError(
            .rateLimited, message: "rate limit exceeded",
            headers: ["Retry-After": String(retryAfterSeconds)])
    }

    /// S001 for a pull asking to wait while its user already has the most waits allowed
    /// (`LOCIFY_MAX_WAITS_PER_USER`): the client retries once one of them is answered.
    static let tooManyWaits = APIError(
        .rateLimited, message: "too many waiting pulls for this user", headers: ["Retry-After": "1"])

    static let internalError = APIError(.internalError, message: "unexpected server error")

    static func unavailable(_ message: String = "temporarily unavailable, retry later") -> APIError {
        APIError(.unavailable, message: message, headers: ["Retry-After": "1"])
    }

    private static func fieldError(_ code: ErrorCode, _ issue: FieldIssue) -> APIError {
        APIError(code, message: RuleViolation.message(field: issue.field, reason: issue.message), details: [issue])
    }
}

extension APIError {
    /// The API rendering of a domain error.
    init(_ error: LocifyError) {
        switch error {
        case .invalidInput(let issue): self = .fieldError(.invalidInput, issue)
        case .invalidCoordinates(let issue): self = .fieldError(.invalidCoordinates, issue)
        case .tokenRevoked: self = .unauthenticated(credentialsSent: true)
        case .notFound(let kind): self = APIError(.notFound, message: RuleViolation.message(notFound: kind.wireName))
        case .conflict(let state):
            self = APIError(.conflict, message: "the server has a newer version of this record", data: state)
        case .cursorExpired:
            self = APIError(.cursorExpired, message: "sync cursor is older than the tombstone retention; resync from scratch")
        case .tooManyChanges(let limit):
            self = .fieldError(.invalidInput, FieldIssue(field: "changes", message: "must hold at most \(limit) changes"))
        }
    }

    /// The API rendering of a request that cannot be read.
    init(_ error: RequestDecodingError) {
        switch error {
        case .invalidInput(let issue): self = .fieldError(.invalidInput, issue)
        case .invalidUUID(let issue): self = .fieldError(.invalidUUID, issue)
        case .missingField(let field): self = .fieldError(.missingField, FieldIssue(field: field, message: "is required"))
        case .forbidden(let issue): self = .fieldError(.forbidden, issue)
        case .refused(let error): self = APIError(error)
        }
    }

    /// Maps any error a handler throws; `nil` means "unexpected": S002, logged by the caller.
    static func mapping(_ error: any Error) -> APIError? {
        switch error {
        case let error as APIError: return error
        case let error as LocifyError: return APIError(error)
        case let error as RequestDecodingError: return APIError(error)
        case let error as PostgresError where error.isUnavailable: return .unavailable()
        case let error as IDTokenError: return APIError(error)
        default: return nil
        }
    }

    /// The one mapping of a token verification failure: a bad token is 401 E005 (credentials
    /// were sent), keys that cannot be fetched are 503 S003.
    init(_ error: IDTokenError) {
        switch error {
        case .invalid: self = .unauthenticated(credentialsSent: true)
        case .keysUnavailable: self = .unavailable("cannot verify tokens right now, retry later")
        }
    }

    /// The JSON rendering of an error the HTTP server detected itself, for those that belong to
    /// the API's table (413 E010; 429 S001 when the client holds its whole share of the body
    /// budget; 503 S003 when the server is overloaded: body budget or worker queue full; each
    /// with its `Retry-After`); nil for malformed HTTP and timeouts, which get a plain status
    /// (openapi.yaml).
    init?(_ error: HTTPRequestError) {
        switch error.status {
        case .contentTooLarge: self = .bodyTooLarge
        case .tooManyRequests: self = .rateLimited(retryAfterSeconds: error.retryAfterSeconds ?? 1)
        case .serviceUnavailable:
            self = .unavailable("server is busy, retry later")
            if let seconds = error.retryAfterSeconds { headers.set("Retry-After", String(seconds)) }
        default: return nil
        }
    }

    /// `{"error":{"code","message","details"?}, "data"?}`; `userID` fills `data`'s `user_id`.
    func encodedBody(userID: String?) -> [UInt8] {
        var writer = JSONWriter(reservingCapacity: 256)
        writer.beginObject()
        writer.key("error")
        writer.beginObject()
        writer.key("code")
        writer.string(code.rawValue)
        writer.key("message")
        writer.string(message)
        if !details.isEmpty {
            writer.key("details")
            writer.beginArray()
            for issue in details {
                writer.beginObject()
                writer.key("field")
                writer.string(issue.field)
                writer.key("message")
                writer.string(issue.message)
                writer.endObject()
            }
            writer.endArray()
        }
        writer.endObject()
        if let data {
            writer.key("data")
            writer.recordState(data, userID: userID)
        }
        writer.endObject()
        return writer.bytes
    }
}

extension HTTPStatus {
    /// The status of an API error code, as the shared table (`ErrorCode.httpStatus`) gives it.
    init(errorCode: ErrorCode) {
        switch errorCode.httpStatus {
        case 400: self = .badRequest
        case 401: self = .unauthorized
        case 403: self = .forbidden
        case 404: self = .notFound
        case 405: self = .methodNotAllowed
        case 409: self = .conflict
        case 410: self = .gone
        case 413: self = .contentTooLarge
        case 415: self = .unsupportedMediaType
        case 429: self = .tooManyRequests
        case 503: self = .serviceUnavailable
        default: self = .internalServerError
        }
    }
}
