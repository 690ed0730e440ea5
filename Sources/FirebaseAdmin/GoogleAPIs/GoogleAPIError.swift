/// A failed call to a Google API, classified for the durable job worker's retry decision.
public struct GoogleAPIError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The HTTP status, nil when no response arrived (network error, timeout, token failure).
    public var status: Int?
    /// What went wrong (Google's error message when it sent one).
    public var message: String
    /// Whether trying again later may succeed: network errors, timeouts, 408, 429, 500, 502,
    /// 503, 504 and access-token failures.
    public var retryable: Bool
    /// Seconds the server asked us to wait (`Retry-After`), when given.
    public var retryAfter: Double?

    /// A failure with its status (nil: no response), message and retry classification.
    public init(status: Int?, message: String, retryable: Bool, retryAfter: Double? = nil) {
        self.status = status
        self.message = message
        self.retryable = retryable
        self.retryAfter = retryAfter
    }

    /// The status (or "no response") and the message, for logs: `HTTP 503: backend error (retryable)`.
    public var description: String {
        let code = status.map { "HTTP \($0)" } ?? "no response"
        return "\(code): \(message)" + (retryable ? " (retryable)" : "")
    }

    /// Whether Google said that this very request can never succeed: a 4xx other than 401 and
    /// 403 (credentials and permissions an operator may fix), 408 and 429 (retryable). Errors
    /// marked retryable (access-token failures) never are.
    public var isPermanent: Bool {
        guard !retryable, let status, (400...499).contains(status) else { return false }
        return ![401, 403, 408, 429].contains(status)
    }

    /// Statuses worth retrying.
    public static func isRetryable(status: Int) -> Bool {
        [408, 429, 500, 502, 503, 504].contains(status)
    }

    /// An error for a transport failure (always retryable).
    static func transport(_ error: any Error) -> GoogleAPIError {
        GoogleAPIError(status: nil, message: "request failed: \(error)", retryable: true)
    }

    /// An error for a failure to obtain an access token (always retryable).
    static func accessToken(_ error: any Error) -> GoogleAPIError {
        if var apiError = error as? GoogleAPIError {
            apiError.retryable = true
            apiError.message = "access token: " + apiError.message
            return apiError
        }
        return GoogleAPIError(status: nil, message: "access token: \(error)", retryable: true)
    }
}
