import Foundation
import LocifyRules

/// What the server said about a refused request: `{"error": {"code", "message", "details"}}`.
public struct ServerError: Codable, Sendable, Hashable {
    /// The HTTP status (0 when the error came inside a push result, which is answered 200).
    public var status: Int
    /// `E001`...`E012`, `S001`...`S003`: switch on this (or on the ``LocifyError`` case).
    public var code: String
    /// For developers, not for users.
    public var message: String
    /// Field-level reasons, when the server gave them.
    public var details: [FieldDetail]
    /// The response's `X-Request-Id`, to find the server's log line.
    public var requestID: String?

    /// One `details` entry.
    public struct FieldDetail: Codable, Sendable, Hashable {
        /// The request field at fault, e.g. `name`.
        public var field: String
        /// What is wrong with it, e.g. `must not be empty`.
        public var message: String
    }

    /// An error as the server described it; ``LocifyError`` builds these from responses, tests and
    /// previews may too.
    public init(status: Int, code: String, message: String, details: [FieldDetail] = [], requestID: String? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.requestID = requestID
    }
}

/// Every way a call can fail: one case per error code of `openapi.yaml`, plus transport failures.
/// E008 carries the server's current record (or tombstone), which a client adopts.
public enum LocifyError: Error, Sendable, Hashable {
    /// E001 (400): invalid input.
    case invalidInput(ServerError)
    /// E002 (400): a malformed UUID.
    case invalidUUID(ServerError)
    /// E003 (400): latitude or longitude out of range.
    case invalidCoordinates(ServerError)
    /// E004 (400): a required field is absent or null.
    case missingField(ServerError)
    /// E005 (401): the ID token is missing, expired or refused (after one refresh).
    case unauthorized(ServerError)
    /// E006 (403): a body `user_id` that is not the token's user.
    case forbidden(ServerError)
    /// E007 (404): no such record for this user (or route).
    case notFound(ServerError)
    /// E008 (409): the write is older than the server's record; `serverRecord` is that record.
    case conflict(ServerError, serverRecord: RecordState)
    /// E009 (410): the sync cursor outlived the tombstone retention; resync from a snapshot.
    case cursorExpired(ServerError)
    /// E010 (413): the request body is too large.
    case payloadTooLarge(ServerError)
    /// E011 (405): method not allowed on the path.
    case methodNotAllowed(ServerError)
    /// E012 (415): the body is not JSON.
    case unsupportedMediaType(ServerError)
    /// S001 (429): rate limited; retry after `retryAfter` seconds.
    case rateLimited(ServerError, retryAfter: Int?)
    /// S002 (500): an unexpected server error.
    case serverError(ServerError)
    /// S003 (503): the server or its database is unavailable; retry after `retryAfter` seconds.
    case unavailable(ServerError, retryAfter: Int?)
    /// A code this version of the client does not know (a newer server).
    case unknownCode(ServerError)
    /// The answer was not what the contract promises (status and the start of the body).
    case unexpectedResponse(status: Int, body: String)
    /// The request did not complete (no connection, connection lost, timeout): the `URLError`
    /// code, its message and the request's id. A write may or may not have been applied: replaying
    /// it is safe.
    case network(NetworkFailure)
    /// The calling task was cancelled.
    case cancelled
    /// The app's token closure threw (e.g. no signed-in user); the request was not sent. (A
    /// closure that failed to reach the network is ``network(_:)`` instead: offline, transient.)
    case tokenUnavailable(String)
    /// The local store failed (disk full, a damaged or newer-version file). Not transient: the
    /// app reports it and may call ``SyncEngine/reset()`` to start again from the server.
    case storeFailed(String)
    /// The local store belongs to another user than the current token's: nothing was sent
    /// (sign the other user out, or ``SyncEngine/reset()`` the store).
    case wrongAccount(storeUser: String, tokenUser: String)
    /// ``SyncEngine/signOut(discardingUnsyncedChanges:)`` erased nothing: this many local changes
    /// could not be pushed first.
    case unsyncedChanges(Int)

    /// The contract's error code, when the server gave one.
    public var code: String? { serverError?.code }

    /// The `X-Request-Id` of the request that failed (the server's log line has it), when one was sent.
    public var requestID: String? {
        if case .network(let failure) = self { return failure.requestID }
        return serverError?.requestID
    }

    /// This error with `requestID` in its server error, when it has one and no id yet.
    func withRequestID(_ requestID: String) -> LocifyError {
        guard var error = serverError, error.requestID == nil else { return self }
        error.requestID = requestID
        switch self {
        case .conflict(_, let record): return .conflict(error, serverRecord: record)
        case .rateLimited(_, let seconds), .unavailable(_, let seconds): return LocifyError(error, retryAfter: seconds)
        default: return LocifyError(error)
        }
    }

    /// The server's error body, when there was one.
    public var serverError: ServerError? {
        switch self {
        case .invalidInput(let error), .invalidUUID(let error), .invalidCoordinates(let error),
            .missingField(let error), .unauthorized(let error), .forbidden(let error), .notFound(let error),
            .cursorExpired(let error), .payloadTooLarge(let error), .methodNotAllowed(let error),
            .unsupportedMediaType(let error), .serverError(let error), .unknownCode(let error):
            return error
        case .conflict(let error, _), .rateLimited(let error, _), .unavailable(let error, _):
            return error
        case .unexpectedResponse, .network, .cancelled, .tokenUnavailable, .storeFailed, .wrongAccount, .unsyncedChanges:
            return nil
        }
    }

    /// Whether trying again later may succeed (transport failures, S001, S002, S003).
    public var isTransient: Bool {
        switch self {
        case .network, .rateLimited, .serverError, .unavailable, .unexpectedResponse: return true
        default: return false
        }
    }

    /// The case for `error`'s code. `conflictRecord` is the E008 `data`; without it an E008 is
    /// reported as an unexpected response (the contract always sends it).
    public init(_ error: ServerError, conflictRecord: RecordState? = nil, retryAfter: Int? = nil) {
        // The codes come from the table the server answers with (LocifyRules' ErrorCode).
        switch ErrorCode(rawValue: error.code) {
        case .invalidInput?: self = .invalidInput(error)
        case .invalidUUID?: self = .invalidUUID(error)
        case .invalidCoordinates?: self = .invalidCoordinates(error)
        case .missingField?: self = .missingField(error)
        case .unauthenticated?: self = .unauthorized(error)
        case .forbidden?: self = .forbidden(error)
        case .notFound?: self = .notFound(error)
        case .conflict?:
            if let conflictRecord {
                self = .conflict(error, serverRecord: conflictRecord)
            } else {
                self = .unexpectedResponse(status: error.status, body: "E008 without the server's record")
            }
        case .cursorExpired?: self = .cursorExpired(error)
        case .bodyTooLarge?: self = .payloadTooLarge(error)
        case .methodNotAllowed?: self = .methodNotAllowed(error)
        case .unsupportedMediaType?: self = .unsupportedMediaType(error)
        case .rateLimited?: self = .rateLimited(error, retryAfter: retryAfter)
        case .internalError?: self = .serverError(error)
        case .unavailable?: self = .unavailable(error, retryAfter: retryAfter)
        case nil: self = .unknownCode(error)
        }
    }

    /// Decodes an error response. `kind` says how to read an E008's `data`.
    static func decode(
        status: Int, body: Data, kind: RecordKind?, requestID: String?, retryAfter: Int?
    ) -> LocifyError {
        struct Envelope: Decodable {
            struct Body: Decodable {
                var code: String
                var message: String
                var details: [ServerError.FieldDetail]?
            }
            var error: Body
        }
        guard let envelope = try? JSONCoding.decoder.decode(Envelope.self, from: body) else {
            return .unexpectedResponse(status: status, body: String(decoding: body.prefix(200), as: UTF8.self))
        }
        let error = ServerError(
            status: status, code: envelope.error.code, message: envelope.error.message,
            details: envelope.error.details ?? [], requestID: requestID)
        var record: RecordState?
        if error.code == "E008", let kind {
            record = try? ConflictData.decode(kind, from: body)
        }
        return LocifyError(error, conflictRecord: record, retryAfter: retryAfter)
    }
}

/// The `data` beside `error` in a 409 body.
private enum ConflictData {
    struct Envelope<Record: Decodable>: Decodable {
        var data: Record
    }

    static func decode(_ kind: RecordKind, from body: Data) throws -> RecordState {
        switch kind {
        case .category: return try JSONCoding.decoder.decode(Envelope<CategoryOrTombstone>.self, from: body).data.state
        case .location: return try JSONCoding.decoder.decode(Envelope<LocationOrTombstone>.self, from: body).data.state
        }
    }
}

extension LocifyError {
    /// The error the server answers a write the shared rules refuse with: the same code, status,
    /// message and field detail (LocifyRules' `RuleViolation`), raised before the edit is queued.
    public init(_ violation: RuleViolation) {
        var details: [ServerError.FieldDetail] = []
        switch violation {
        case .invalidInput(let field, let reason), .invalidCoordinates(let field, let reason):
            details = [ServerError.FieldDetail(field: field, message: reason)]
        case .notFound:
            break
        }
        self.init(ServerError(status: violation.code.httpStatus, code: violation.code.rawValue, message: violation.message, details: details))
    }
}

/// Why a request did not complete (``LocifyError/network(_:)``).
public struct NetworkFailure: Sendable, Hashable {
    /// The `URLError` code (`.notConnectedToInternet`, `.timedOut`, `.networkConnectionLost`...),
    /// nil when the failure was not a `URLError`.
    public var code: URLError.Code?
    /// The system's description, for logs.
    public var message: String
    /// The `X-Request-Id` the request was sent with.
    public var requestID: String?

    /// A failure with this code, message and request id.
    public init(code: URLError.Code?, message: String, requestID: String? = nil) {
        self.code = code
        self.message = message
        self.requestID = requestID
    }
}

extension NetworkFailure {
    /// Firebase Auth's "network error" (`AuthErrorCode.networkError`), which a token refresh
    /// that could not reach Google throws.
    static let firebaseAuthNetworkError = (domain: "FIRAuthErrorDomain", code: 17020)

    /// The network failure `error` stands for, or wraps (`NSUnderlyingErrorKey`, as Firebase
    /// Auth wraps the `URLError` of a refresh): nil when it is not one.
    init?(causeOf error: any Error) {
        var current: (any Error)? = error
        var depth = 0
        while let error = current, depth < 8 {
            let nsError = error as NSError
            if let urlError = error as? URLError {
                self.init(code: urlError.code, message: urlError.localizedDescription)
                return
            }
            if nsError.domain == NSURLErrorDomain {
                self.init(code: URLError.Code(rawValue: nsError.code), message: nsError.localizedDescription)
                return
            }
            let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? any Error
            if underlying == nil, nsError.domain == Self.firebaseAuthNetworkError.domain, nsError.code == Self.firebaseAuthNetworkError.code {
                self.init(code: nil, message: nsError.localizedDescription)
                return
            }
            current = underlying
            depth += 1
        }
        return nil
    }
}

extension LocifyError: LocalizedError {
    /// A sentence for a log or an alert's details: the server's code and message, the network's
    /// reason, or what the app should do about an account or sign-out problem.
    public var errorDescription: String? {
        switch self {
        case .network(let failure): return "The server could not be reached: \(failure.message)"
        case .wrongAccount(let storeUser, let tokenUser):
            return "This device's data belongs to user \(storeUser), not to the signed-in user \(tokenUser): sign \(storeUser) out first."
        case .unsyncedChanges(let count): return "\(count) local changes are not synced yet: signing out now would lose them."
        case .cancelled: return "Cancelled."
        case .tokenUnavailable(let reason): return "No ID token: \(reason)"
        case .storeFailed(let reason): return "The local store failed: \(reason)"
        case .unexpectedResponse(let status, let body): return "Unexpected answer (HTTP \(status)): \(body)"
        default: return serverError.map { "\($0.code): \($0.message)" }
        }
    }
}
