import Postgres

/// Timestamps are bound and decoded as `timestamptz` exactly, through `PostgresTimestamp`.
extension Timestamp: PostgresEncodable, PostgresDecodable {
    public static var postgresDataType: PostgresDataType { PostgresTimestamp.postgresDataType }

    public func encode(into buffer: inout [UInt8]) {
        PostgresTimestamp(millisecondsSince1970: milliseconds).encode(into: &buffer)
    }

    public static func acceptsPostgresType(_ type: PostgresDataType) -> Bool {
        PostgresTimestamp.acceptsPostgresType(type)
    }

    public init(postgresBinary bytes: UnsafeRawBufferPointer, type: PostgresDataType) throws(PostgresError) {
        self.init(milliseconds: try PostgresTimestamp(postgresBinary: bytes, type: type).millisecondsSince1970)
    }
}
