/// A Swift value that can be bound to a query parameter, in PostgreSQL's binary wire format.
///
/// The parameter's type travels with the statement, so NULLs are typed too and the server never
/// has to infer a type from context.
public protocol PostgresEncodable: Sendable {
    /// The PostgreSQL type this value is sent as.
    static var postgresDataType: PostgresDataType { get }
    /// Appends the value's binary representation (without a length prefix) to `buffer`.
    func encode(into buffer: inout [UInt8])
}

/// A type whose Swift arrays map to a one-dimensional PostgreSQL array (`[String]` is `text[]`).
public protocol PostgresArrayElement {
    /// The array type sent when binding `[Self]`, e.g. `text[]` for `String`.
    static var postgresArrayDataType: PostgresDataType { get }
    /// Whether `[Self]` decodes from an array column of `type`; by default only
    /// `postgresArrayDataType`. A function, not a set: it runs for every array column decoded.
    static func acceptsPostgresArrayType(_ type: PostgresDataType) -> Bool
}

extension PostgresArrayElement {
    /// Only the array type this element binds as.
    public static func acceptsPostgresArrayType(_ type: PostgresDataType) -> Bool { type == postgresArrayDataType }
}

extension [UInt8] {
    /// Appends `value` in network byte order.
    mutating func appendBigEndian<Value: FixedWidthInteger>(_ value: Value) {
        Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
    }
}
