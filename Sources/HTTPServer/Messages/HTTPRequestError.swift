/// A framing, limit or overload error the server detected itself (malformed request line or
/// fields, body too large, timeout, body budget or worker queue full...). The connection is
/// closed after its response.
public struct HTTPRequestError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The status to answer with (400, 408, 413, 414, 431, 501, 503, 505 ...).
    public let status: HTTPStatus
    /// What was wrong, for logs (never contains request bytes).
    public let reason: String
    /// For a 503 the server sends because it is overloaded: the `Retry-After` seconds to answer
    /// with. nil for the other errors.
    public let retryAfterSeconds: Int?

    /// Creates an error.
    public init(status: HTTPStatus, reason: String, retryAfterSeconds: Int? = nil) {
        self.status = status
        self.reason = reason
        self.retryAfterSeconds = retryAfterSeconds
    }

    /// The status code and the reason, for logs.
    public var description: String { "\(status.code): \(reason)" }

    static func badRequest(_ reason: String) -> HTTPRequestError {
        HTTPRequestError(status: .badRequest, reason: reason)
    }
}
