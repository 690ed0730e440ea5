internal import CLibPQ

/// How to reach the database: the parsed connection parameters plus client-side settings.
public struct PostgresConfiguration: Sendable, Hashable, CustomStringConvertible {
    /// The parameters given explicitly in the connection string, in order (libpq keywords, e.g.
    /// `host`, `port`, `dbname`, `user`, `password`). Unset ones fall back to libpq's defaults and
    /// `PG*` environment variables.
    public private(set) var parameters: [Parameter]
    /// How long opening one connection may take, default 5 seconds.
    public var connectTimeout: Duration = .seconds(5)
    /// The session's `statement_timeout`, default 30 seconds (nil: the server's setting), so a
    /// stuck statement cannot hold a worker thread forever.
    public var statementTimeout: Duration? = .seconds(30)
    /// Run-time parameters set on every new session (`set_config(name, value)`), e.g.
    /// `plan_cache_mode`. Default none.
    public var sessionSettings: [String: String] = [:]
    /// The `application_name` reported to the server (visible in `pg_stat_activity`), default
    /// `locify`; an `application_name` in the connection string wins.
    public var applicationName = "locify"
    /// How long a silently dead network (a peer gone without a word, as after a failover) may go
    /// unnoticed, default 60 seconds: the TCP user timeout (sent data unacknowledged), and TCP
    /// keepalives that give up within it on an idle connection (probes from half of it, every sixth,
    /// three unanswered). Whole seconds, at least 3.
    public var deadNetworkTimeout: Duration = .seconds(60)

    /// One libpq connection keyword and its value.
    public struct Parameter: Sendable, Hashable {
        /// The libpq keyword, e.g. `host`.
        public var keyword: String
        /// Its value.
        public var value: String
    }

    /// Parses a `postgres://` / `postgresql://` URI or a `key=value` connection string with libpq's
    /// own parser; an unparseable string is an `.invalidConfiguration` error with libpq's reason.
    public init(connectionString: String) throws(PostgresError) {
        var errorMessage: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(connectionString, &errorMessage) else {
            var reason = "out of memory"
            if let errorMessage {
                reason = String(cString: errorMessage).trimmingTrailingWhitespace()
                PQfreemem(errorMessage)
            }
            // libpq quotes the offending token, which may be (part of) the password: the error,
            // and so every log line that shows it, carries only redacted text.
            let redaction = Self.redaction(of: connectionString)
            throw PostgresError(
                kind: .invalidConfiguration,
                message: "invalid connection string \(redaction.shown): \(Self.redactedReason(reason, redaction: redaction))")
        }
        defer { PQconninfoFree(options) }
        var parameters: [Parameter] = []
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val {
                parameters.append(Parameter(keyword: String(cString: keyword), value: String(cString: value)))
            }
            option = option.successor()
        }
        self.parameters = parameters
        // A password with an unencoded `/` ends libpq's userinfo early (its first part becomes
        // the port, the rest with `@host` the database name), one with an unencoded `@` leaves
        // its tail in the host. Refused here, where the string is read, and without quoting a
        // value: any of them may be (part of) the password.
        if Self.uriHoldsStrayAt(connectionString) {
            throw PostgresError(
                kind: .invalidConfiguration,
                message: "invalid connection string \(Self.redacted(connectionString)): an \"@\" in the host or the database "
                    + "name, which usually means a password with an unencoded \"/\" or \"@\" (percent-encode \"/\", \"?\" "
                    + "and \"@\" in a password as %2F, %3F and %40, and an \"@\" in a database name as %40)")
        }
        // libpq checks the port only when connecting; say so now, where the string is read.
        if let port = value(of: "port") {
            for item in port.split(separator: ",", omittingEmptySubsequences: false) {
                guard item.isEmpty || Int(item).map({ (1...65535).contains($0) }) == true else {
                    throw PostgresError(
                        kind: .invalidConfiguration,
                        message: "invalid connection string \(Self.redacted(connectionString)): the port is not a number from 1 to 65535")
                }
            }
        }
    }

    /// The value of a libpq keyword given in the connection string, if any.
    public func value(of keyword: String) -> String? {
        parameters.last { $0.keyword == keyword }?.value
    }

    /// Sets (or, with `nil`, removes) a libpq keyword.
    public mutating func setValue(_ value: String?, for keyword: String) {
        parameters.removeAll { $0.keyword == keyword }
        if let value {
            parameters.append(Parameter(keyword: keyword, value: value))
        }
    }

    /// The database name (`dbname`), when the connection string gives one.
    public var database: String? {
        get { value(of: "dbname") }
        set { setValue(newValue, for: "dbname") }
    }

    /// The parameters as a `key='value'` connection string (password included: do not log it).
    public var connectionString: String {
        parameters.map { "\($0.keyword)=\(Self.quote($0.value))" }.joined(separator: " ")
    }

    /// Host, port, database and user, for logs; never the password.
    public var description: String {
        let shown = ["host", "hostaddr", "port", "dbname", "user"]
        let parts = shown.compactMap { keyword in value(of: keyword).map { "\(keyword)=\($0)" } }
        return "PostgresConfiguration(" + parts.joined(separator: " ") + ")"
    }

    /// The keyword/value pairs handed to libpq when connecting: the explicit parameters win over
    /// this library's defaults (`application_name`, UTF-8 client encoding, TCP keepalives and a
    /// user timeout so a silently dead network is noticed within `deadNetworkTimeout`).
    var connectParameters: [(keyword: String, value: String)] {
        let seconds = max(3, deadNetworkTimeout.milliseconds / 1000)
        var result: [(keyword: String, value: String)] = [
            ("application_name", applicationName),
            ("client_encoding", "UTF8"),
            ("keepalives", "1"),
            ("keepalives_idle", "\(seconds / 2)"),
            ("keepalives_interval", "\(max(1, seconds / 6))"),
            ("keepalives_count", "3"),
            ("tcp_user_timeout", "\(seconds * 1000)"),
        ]
        result.append(contentsOf: parameters.map { ($0.keyword, $0.value) })
        return result
    }

    /// Quotes a value for a `key=value` connection string: single quotes, `\` escapes `'` and `\`.
    private static func quote(_ value: String) -> String {
        var quoted = "'"
        for character in value {
            if character == "'" || character == "\\" {
                quoted.append("\\")
            }
            quoted.append(character)
        }
        quoted.append("'")
        return quoted
    }
}

extension String {
    func trimmingTrailingWhitespace() -> String {
        var result = self
        while let last = result.last, last.isWhitespace {
            result.removeLast()
        }
        return result
    }
}
