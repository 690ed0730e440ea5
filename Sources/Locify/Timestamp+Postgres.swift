import Postgres

/// Timestamps are bound and decoded as `timestamptz` exactly, through `PostgresTimestamp`.
extension Timestamp: PostgresEncodable, PostgresDecodable {
    /// Stored as `timestamptz`.
    public static var postgresDataType: PostgresDataType { PostgresTimestamp.postgresDataType }

    /// Appends the binary `timestamptz` (microseconds since 2000-01-01).
    public func encode(into buffer: inout [UInt8]) {
        PostgresTimestamp(millisecondsSince1970: milliseconds).encode(into: &buffer)
    }

    /// Reads `timestamptz` and `timestamp` columns.
    public static func acceptsPostgresType(_ type: PostgresDataType) -> Bool {
        PostgresTimestamp.acceptsPostgresType(type)
    }

    /// Decodes a binary `timestamptz`, truncating to milliseconds.
    public init(postgresBinary bytes: UnsafeRawBufferPointer, type: PostgresDataType) throws(PostgresError) {
        self.init(milliseconds: try PostgresTimestamp(postgresBinary: bytes, type: type).millisecondsSince1970)
    }
}
