/// A framing or limit error the server detected itself (malformed request line or fields, body
/// too large, timeout...). The connection is closed after its response.
public struct HTTPRequestError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The status to answer with (400, 408, 413, 414, 431, 501, 505 ...).
    public let status: HTTPStatus
    /// What was wrong, for logs (never contains request bytes).
    public let reason: String

    /// Creates an error.
    public init(status: HTTPStatus, reason: String) {
        self.status = status
        self.reason = reason
    }

    /// The status code and the reason, for logs.
    public var description: String { "\(status.code): \(reason)" }

    static func badRequest(_ reason: String) -> HTTPRequestError {
        HTTPRequestError(status: .badRequest, reason: reason)
    }
}
