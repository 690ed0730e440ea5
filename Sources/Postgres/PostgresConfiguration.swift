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
            let redacted = Self.redacted(connectionString)
            throw PostgresError(
                kind: .invalidConfiguration,
                message: "invalid connection string \(redacted): \(Self.redactedReason(reason, shown: redacted))")
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
        // libpq checks the port only when connecting; say so now, where the string is read.
        if let port = value(of: "port") {
            for item in port.split(separator: ",", omittingEmptySubsequences: false) {
                guard item.isEmpty || Int(item).map({ (1...65535).contains($0) }) == true else {
                    throw PostgresError(kind: .invalidConfiguration, message: "invalid connection string: port \"\(port)\" is not a port number")
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
    /// user timeout so a silently dead network is noticed within about a minute).
    var connectParameters: [(keyword: String, value: String)] {
        var result: [(keyword: String, value: String)] = [
            ("application_name", applicationName),
            ("client_encoding", "UTF8"),
            ("keepalives", "1"),
            ("keepalives_idle", "30"),
            ("keepalives_interval", "10"),
            ("keepalives_count", "3"),
            ("tcp_user_timeout", "60000"),
        ]
        result.append(contentsOf: parameters.map { ($0.keyword, $0.value) })
        return result
    }

    /// `connectionString` with its password replaced by `***`, for logs and errors: the userinfo
    /// password and a `password` query parameter of a `postgres://` / `postgresql://` URI (up to
    /// the last `@` of the authority, so a stray `@` or `/` in it is hidden too), or the `password`
    /// value of a `key=value` string (quoted or not; an unterminated quote hides the rest).
    public static func redacted(_ connectionString: String) -> String {
        let lowered = connectionString.lowercased()
        guard let prefix = ["postgresql://", "postgres://"].first(where: { lowered.hasPrefix($0) }) else {
            return redactedKeywordValue(connectionString)
        }
        var text = Substring(connectionString)
        let scheme = String(text.prefix(prefix.count))
        text = text.dropFirst(prefix.count)
        var query: Substring = ""
        if let mark = text.firstIndex(of: "?") {
            query = text[mark...]
            text = text[..<mark]
        }
        var result = scheme
        if let at = text.lastIndex(of: "@") {
            let userinfo = text[..<at]
            if let colon = userinfo.firstIndex(of: ":") {
                result += userinfo[..<colon] + ":***"
            } else {
                result += userinfo
            }
            result += text[at...]
        } else {
            result += text
        }
        if !query.isEmpty {
            let pairs = query.dropFirst().split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
                let key = pair.split(separator: "=", maxSplits: 1).first.map { $0.lowercased() } ?? ""
                return key == "password" ? "password=***" : String(pair)
            }
            result += "?" + pairs.joined(separator: "&")
        }
        return result
    }

    /// `key=value` form: each `password` value (quoted with `'` and `\` escapes, or up to
    /// whitespace) becomes `***`.
    private static func redactedKeywordValue(_ text: String) -> String {
        let characters = Array(text)
        var result = ""
        var index = 0
        while index < characters.count {
            // A keyword starts after whitespace (or at the start).
            guard characters[index].isLetter, index == 0 || characters[index - 1].isWhitespace else {
                result.append(characters[index])
                index += 1
                continue
            }
            var end = index
            while end < characters.count, characters[end].isLetter || characters[end] == "_" { end += 1 }
            let keyword = String(characters[index..<end])
            var equals = end
            while equals < characters.count, characters[equals].isWhitespace { equals += 1 }
            guard keyword.lowercased() == "password", equals < characters.count, characters[equals] == "=" else {
                result += keyword
                index = end
                continue
            }
            var value = equals + 1
            while value < characters.count, characters[value].isWhitespace { value += 1 }
            if value < characters.count, characters[value] == "'" {
                value += 1
                while value < characters.count, characters[value] != "'" {
                    value += characters[value] == "\\" ? 2 : 1
                }
                value = min(value + 1, characters.count)
            } else {
                while value < characters.count, !characters[value].isWhitespace { value += 1 }
            }
            result += "password=***"
            index = value
        }
        return result
    }

    /// libpq's reason with every quoted token that does not appear in the redacted string `shown`
    /// replaced by `***` (libpq quotes the token it could not parse, e.g. a password with a `%`).
    private static func redactedReason(_ reason: String, shown: String) -> String {
        let parts = reason.split(separator: "\"", omittingEmptySubsequences: false)
        return parts.enumerated().map { index, part in
            index % 2 == 1 && index < parts.count - 1 && !shown.contains(part) ? "***" : String(part)
        }.joined(separator: "\"")
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
