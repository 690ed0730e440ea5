/// A SQL statement with its bind values; each interpolated `\(value)` becomes `$n` plus a bind.
///
/// ```swift
/// let query: PostgresQuery = "SELECT name FROM categories WHERE user_id = \(userID) AND id = \(id)"
/// ```
/// Values are never spliced into the SQL text. Trusted fragments (an `ORDER BY` picked from a
/// closed set, a generated identifier) go through `\(unsafeSQL: fragment)`, never user input.
public struct PostgresQuery: Sendable, Hashable, ExpressibleByStringInterpolation {
    /// The SQL text, with `$1`, `$2`, ... where the binds go.
    public var sql: String
    /// The bind values, `binds[0]` being `$1`.
    public var binds: [PostgresBind]

    /// A query from fixed SQL text and already encoded binds (which must match its `$n` placeholders).
    public init(unsafeSQL sql: String, binds: [PostgresBind] = []) {
        self.sql = sql
        self.binds = binds
    }

    /// A query without binds from a string literal.
    public init(stringLiteral value: String) {
        self.init(unsafeSQL: value)
    }

    /// A query built by string interpolation.
    public init(stringInterpolation: StringInterpolation) {
        self.init(unsafeSQL: stringInterpolation.sql, binds: stringInterpolation.binds)
    }

    /// Collects literal SQL and turns each interpolated value into a `$n` placeholder plus a bind.
    public struct StringInterpolation: StringInterpolationProtocol, Sendable {
        var sql: String
        var binds: [PostgresBind]

        /// Reserves room for the literal text and binds.
        public init(literalCapacity: Int, interpolationCount: Int) {
            sql = ""
            sql.reserveCapacity(literalCapacity + 4 * interpolationCount)
            binds = []
            binds.reserveCapacity(interpolationCount)
        }

        /// Appends SQL text written in the source code.
        public mutating func appendLiteral(_ literal: String) {
            sql.append(literal)
        }

        /// Appends `$n` and binds `value` to it.
        public mutating func appendInterpolation<Value: PostgresEncodable>(_ value: Value) {
            appendBind(PostgresBind(value))
        }

        /// Appends `$n` and binds `value`, or a NULL of `Value`'s type when it is `nil`.
        public mutating func appendInterpolation<Value: PostgresEncodable>(_ value: Value?) {
            appendBind(PostgresBind(value))
        }

        /// Appends trusted SQL text as is: identifiers or keywords chosen by the program, never input.
        public mutating func appendInterpolation(unsafeSQL fragment: String) {
            sql.append(fragment)
        }

        /// Appends another query as a fragment of this one, its binds after this one's: each `$n`
        /// of its text is renumbered to follow the binds appended so far (a `$` inside a quoted
        /// literal or a comment is left as is). So a statement can be composed of fragments written once, such
        /// as the account gate's condition, and stays parameterized.
        public mutating func appendInterpolation(_ fragment: PostgresQuery) {
            sql.append(fragment.renumbered(after: binds.count))
            binds.append(contentsOf: fragment.binds)
        }

        private mutating func appendBind(_ bind: PostgresBind) {
            binds.append(bind)
            sql.append("$")
            sql.append(String(binds.count))
        }
    }

    /// `head` followed by this query, this query's binds first: only `head`'s text is renumbered,
    /// so a short fragment can lead a long statement without rewriting the statement's text.
    public func prepending(_ head: PostgresQuery) -> PostgresQuery {
        PostgresQuery(unsafeSQL: head.renumbered(after: binds.count) + sql, binds: binds + head.binds)
    }

    /// The text with each placeholder `$n` outside quoted literals, identifiers and `--` comments
    /// turned into `$(n + offset)`. Works on the UTF-8 bytes: every byte it looks for is ASCII.
    /// Not understood, and not used by any fragment of the project: `E'...'` escapes, dollar
    /// quoting and `/* */` comments.
    func renumbered(after offset: Int) -> String {
        guard offset > 0, sql.utf8.contains(UInt8(ascii: "$")) else { return sql }
        let text = Array(sql.utf8)
        var result: [UInt8] = []
        result.reserveCapacity(text.count + 16)
        var quote: UInt8?
        var index = 0
        while index < text.count {
            let byte = text[index]
            if let open = quote {
                if byte == open { quote = nil }
            } else if byte == UInt8(ascii: "'") || byte == UInt8(ascii: "\"") {
                quote = byte
            } else if byte == UInt8(ascii: "-"), index + 1 < text.count, text[index + 1] == UInt8(ascii: "-") {
                // A comment runs to the end of its line, untouched.
                let end = text[index...].firstIndex(of: UInt8(ascii: "\n")) ?? text.count
                result += text[index..<end]
                index = end
                continue
            } else if byte == UInt8(ascii: "$") {
                var end = index + 1
                var number = 0
                // PostgreSQL takes at most 65,535 binds: more digits than that are not a placeholder's.
                while end < text.count, end - index <= 6, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(text[end]) {
                    number = number * 10 + Int(text[end] - UInt8(ascii: "0"))
                    end += 1
                }
                if end > index + 1 {
                    result.append(byte)
                    result += String(number + offset).utf8
                    index = end
                    continue
                }
            }
            result.append(byte)
            index += 1
        }
        return String(decoding: result, as: UTF8.self)
    }
}
