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

        private mutating func appendBind(_ bind: PostgresBind) {
            binds.append(bind)
            sql.append("$")
            sql.append(String(binds.count))
        }
    }
}
