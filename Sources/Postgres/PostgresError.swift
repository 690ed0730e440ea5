/// The one error type of the Postgres layer: what went wrong, plus the server's diagnostics.
///
/// `description` is deliberately generic (kind and SQLSTATE only) so it can be shown or logged
/// anywhere without leaking SQL, values or server messages; `debugDescription` carries everything
/// and belongs in logs that are allowed to hold details.
public struct PostgresError: Error, Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// What kind of failure this is; callers mostly need `isUnavailable` or `sqlState`.
    public enum Kind: Sendable, Hashable {
        /// A connection could not be opened (server down, refused, bad credentials, timeout).
        case connectionFailed
        /// An open connection broke while in use (server restart, network, terminated backend).
        case connectionLost
        /// No pooled connection became free within the pool's acquire timeout.
        case poolTimeout
        /// The pool was closed.
        case poolClosed
        /// The server rejected a statement; `sqlState` says why.
        case server
        /// A result value could not be decoded into the requested Swift type; `column` names it.
        case decoding
        /// The connection string or another configuration value is invalid.
        case invalidConfiguration
        /// A migration could not be applied or an applied one no longer matches its file.
        case migration
    }

    /// What kind of failure this is.
    public var kind: Kind
    /// The five-character SQLSTATE code reported by the server, when there is one.
    public var sqlState: String?
    /// The primary message (from the server or from this library). Never shown by `description`.
    public var message: String
    /// The server's detail message, when there is one.
    public var detail: String?
    /// The name of the violated constraint, when the server reports one.
    public var constraint: String?
    /// The column concerned: the server's column name, or the result column that failed to decode.
    public var column: String?
    /// The table concerned, when the server reports one.
    public var table: String?

    /// Creates an error; most errors are created by this library, not by callers.
    public init(
        kind: Kind,
        sqlState: String? = nil,
        message: String,
        detail: String? = nil,
        constraint: String? = nil,
        column: String? = nil,
        table: String? = nil
    ) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
        self.constraint = constraint
        self.column = column
        self.table = table
    }

    /// True when the database is unreachable rather than the request being wrong, so the caller
    /// answers 503: connection failed or lost, pool timeout or closed, or SQLSTATE class 08
    /// (connection exception), 57P01-57P03 (shutdown, cannot connect now), 53 (insufficient
    /// resources) or 25006 (a write reached a read-only standby: a failover is under way).
    public var isUnavailable: Bool {
        switch kind {
        case .connectionFailed, .connectionLost, .poolTimeout, .poolClosed:
            return true
        case .server, .decoding, .invalidConfiguration, .migration:
            guard let sqlState else { return false }
            return sqlState.hasPrefix("08") || sqlState.hasPrefix("53")
                || sqlState == "57P01" || sqlState == "57P02" || sqlState == "57P03" || sqlState == "25006"
        }
    }

    /// True for SQLSTATE 40001 (serialization failure) and 40P01 (deadlock detected): running the
    /// whole transaction again may succeed.
    public var isRetryableTransactionFailure: Bool {
        sqlState == "40001" || sqlState == "40P01"
    }

    /// A generic text without SQL, values or server messages: safe for any log or response.
    public var description: String {
        if let sqlState {
            return "PostgresError.\(kind) (SQLSTATE \(sqlState))"
        }
        return "PostgresError.\(kind)"
    }

    /// Everything known about the error, including the server's message and detail.
    public var debugDescription: String {
        var parts = ["kind: \(kind)"]
        if let sqlState { parts.append("sqlState: \(sqlState)") }
        parts.append("message: \(message)")
        if let detail { parts.append("detail: \(detail)") }
        if let constraint { parts.append("constraint: \(constraint)") }
        if let table { parts.append("table: \(table)") }
        if let column { parts.append("column: \(column)") }
        return "PostgresError(" + parts.joined(separator: ", ") + ")"
    }
}
