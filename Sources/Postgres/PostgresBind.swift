/// One bind value of a query: its PostgreSQL type and its binary-format bytes (`nil` is SQL NULL).
public struct PostgresBind: Sendable, Hashable {
    /// The parameter type sent with the statement, so the server never has to guess it.
    public var dataType: PostgresDataType
    /// The value in PostgreSQL's binary wire format, or `nil` for NULL.
    public var bytes: [UInt8]?

    /// Creates a bind from already encoded binary bytes.
    public init(dataType: PostgresDataType, bytes: [UInt8]?) {
        self.dataType = dataType
        self.bytes = bytes
    }

    /// Encodes `value` in binary format.
    public init<Value: PostgresEncodable>(_ value: Value) {
        var bytes: [UInt8] = []
        value.encode(into: &bytes)
        self.init(dataType: Value.postgresDataType, bytes: bytes)
    }

    /// Encodes `value`, or a typed NULL when it is `nil`.
    public init<Value: PostgresEncodable>(_ value: Value?) {
        if let value {
            self.init(value)
        } else {
            self.init(dataType: Value.postgresDataType, bytes: nil)
        }
    }
}
