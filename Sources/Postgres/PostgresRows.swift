/// The rows of one query result, in order; it owns the underlying libpq result.
///
/// Not `Sendable`: decode on the thread that ran the query, then pass the decoded values along.
public struct PostgresRows: RandomAccessCollection {
    let result: PostgresResult

    init(result: PostgresResult) {
        self.result = result
    }

    /// Rows inserted, updated or deleted by the statement (for SELECT: rows returned).
    public var affectedRowCount: Int { result.affectedRowCount }

    /// The result's columns, in order.
    public var columns: [PostgresColumn] {
        (0..<result.columnCount).map { PostgresColumn(name: result.columnName($0), dataType: result.columnType($0)) }
    }

    /// The first row's index, 0.
    public var startIndex: Int { 0 }
    /// One past the last row.
    public var endIndex: Int { result.rowCount }

    /// The row at `position`.
    public subscript(position: Int) -> PostgresRow {
        precondition(position >= 0 && position < result.rowCount, "row index out of range")
        return PostgresRow(result: result, index: position)
    }
}

@available(*, unavailable)
extension PostgresRows: Sendable {}

/// A result column's name and type.
public struct PostgresColumn: Sendable, Hashable {
    /// The column name as the server reports it.
    public var name: String
    /// The column's type.
    public var dataType: PostgresDataType
}
