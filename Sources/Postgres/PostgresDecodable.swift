/// A Swift type that can be decoded from a result column in PostgreSQL's binary wire format.
///
/// `Optional` of a decodable type is decodable and turns NULL into `nil`; decoding NULL into a
/// non-optional type is a `.decoding` error naming the column.
public protocol PostgresDecodable {
    /// Whether a column of `type` can be decoded into this Swift type.
    static func acceptsPostgresType(_ type: PostgresDataType) -> Bool
    /// Decodes a non-NULL binary value of a column whose type passed `acceptsPostgresType`.
    init(postgresBinary bytes: UnsafeRawBufferPointer, type: PostgresDataType) throws(PostgresError)
    /// The value NULL decodes to, or `nil` when NULL is an error (everything but `Optional`).
    static var postgresNullValue: Self? { get }
}

extension PostgresDecodable {
    /// NULL is an error for non-optional types.
    public static var postgresNullValue: Self? { nil }
}

extension Optional: PostgresDecodable where Wrapped: PostgresDecodable {
    /// The wrapped type's accepted column types.
    public static func acceptsPostgresType(_ type: PostgresDataType) -> Bool {
        Wrapped.acceptsPostgresType(type)
    }

    /// Decodes the wrapped value.
    public init(postgresBinary bytes: UnsafeRawBufferPointer, type: PostgresDataType) throws(PostgresError) {
        self = .some(try Wrapped(postgresBinary: bytes, type: type))
    }

    /// NULL decodes to `nil`.
    public static var postgresNullValue: Self? { .some(.none) }
}

extension PostgresError {
    /// A decoding failure; the row fills in the column name.
    static func decoding(_ message: String, column: String? = nil) -> PostgresError {
        PostgresError(kind: .decoding, message: message, column: column)
    }
}
