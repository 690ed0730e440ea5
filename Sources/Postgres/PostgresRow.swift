/// One row of a result; decode its columns by position or by name.
public struct PostgresRow {
    let result: PostgresResult
    /// The row's position in its result.
    public let index: Int

    /// The number of columns.
    public var columnCount: Int { result.columnCount }

    /// Decodes column `column` (0-based) as `T`; a type mismatch or a NULL into a non-optional
    /// type is a `.decoding` error naming the column.
    public func decode<T: PostgresDecodable>(_ column: Int, as type: T.Type = T.self) throws(PostgresError) -> T {
        guard column >= 0, column < result.columnCount else {
            throw .decoding("column index \(column) is out of range (\(result.columnCount) columns)", column: "#\(column)")
        }
        let columnType = result.columnType(column)
        if result.isNull(row: index, column: column) {
            guard let null = T.postgresNullValue else {
                let name = result.columnName(column)
                throw .decoding("column \"\(name)\" is NULL but \(T.self) is not optional", column: name)
            }
            return null
        }
        guard T.acceptsPostgresType(columnType) else {
            let name = result.columnName(column)
            throw .decoding("column \"\(name)\" of type \(columnType) cannot be decoded as \(T.self)", column: name)
        }
        do {
            return try T(postgresBinary: result.bytes(row: index, column: column), type: columnType)
        } catch {
            let name = result.columnName(column)
            var named = error
            named.column = name
            named.message = "column \"\(name)\": " + error.message
            throw named
        }
    }

    /// Decodes the column called `column` (exact name as returned by the server) as `T`.
    public func decode<T: PostgresDecodable>(column: String, as type: T.Type = T.self) throws(PostgresError) -> T {
        guard let position = result.columnIndex(named: column) else {
            throw .decoding("the result has no column \"\(column)\"", column: column)
        }
        return try decode(position, as: type)
    }

    /// True when the column holds NULL.
    public func isNull(_ column: Int) -> Bool {
        guard column >= 0, column < result.columnCount else { return true }
        return result.isNull(row: index, column: column)
    }
}

@available(*, unavailable)
extension PostgresRow: Sendable {}
