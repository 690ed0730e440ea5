import Postgres

/// Columns a statement selects, declared once with the code that decodes them: `sql` is the
/// select-list fragment, `decode` reads those columns in the same order. A statement returning
/// several things composes their sets (`then`, `orNil`), so no code counts column positions.
struct ColumnSet<Value>: Sendable {
    /// The select list: comma-separated expressions, trusted text without binds.
    let sql: String
    /// How many columns `sql` yields.
    let width: Int
    private let read: @Sendable (inout ColumnReader) throws(PostgresError) -> Value

    /// The columns `expressions` (each one column), read in that order by `read`.
    init(_ expressions: [String], read: @escaping @Sendable (inout ColumnReader) throws(PostgresError) -> Value) {
        self.init(sql: expressions.joined(separator: ", "), width: expressions.count, read: read)
    }

    /// A table's columns `names`, qualified by `alias`, read in that order by `read`.
    init(
        _ names: [String], alias: String, read: @escaping @Sendable (inout ColumnReader) throws(PostgresError) -> Value
    ) {
        self.init(names.map { alias + "." + $0 }, read: read)
    }

    private init(sql: String, width: Int, read: @escaping @Sendable (inout ColumnReader) throws(PostgresError) -> Value) {
        self.sql = sql
        self.width = width
        self.read = read
    }

    /// Decodes the row's columns from the reader's position on, moving the reader past them.
    func decode(_ reader: inout ColumnReader) throws(PostgresError) -> Value {
        let end = reader.column + width
        let value = try read(&reader)
        reader.column = end
        return value
    }

    /// Decodes a row that starts with these columns.
    func decode(_ row: PostgresRow) throws(PostgresError) -> Value {
        var reader = ColumnReader(row)
        return try decode(&reader)
    }

    /// These columns followed by `next`'s.
    func then<Next>(_ next: ColumnSet<Next>) -> ColumnSet<(Value, Next)> {
        ColumnSet<(Value, Next)>(sql: sql + ", " + next.sql, width: width + next.width) { reader throws(PostgresError) in
            (try decode(&reader), try next.decode(&reader))
        }
    }

    /// The same columns, nil when the first is NULL: the side of an outer join that matched nothing.
    var orNil: ColumnSet<Value?> {
        ColumnSet<Value?>(sql: sql, width: width) { reader throws(PostgresError) in
            reader.isNull ? nil : try decode(&reader)
        }
    }

    /// The same columns, decoded into another value.
    func map<Other>(_ transform: @escaping @Sendable (Value) -> Other) -> ColumnSet<Other> {
        ColumnSet<Other>(sql: sql, width: width) { reader throws(PostgresError) in transform(try decode(&reader)) }
    }
}

/// Reads a row's columns one after the other, for a `ColumnSet`'s decoding.
struct ColumnReader {
    let row: PostgresRow
    /// The next column to read.
    fileprivate(set) var column: Int

    init(_ row: PostgresRow) {
        self.row = row
        column = 0
    }

    /// Decodes the next column.
    mutating func next<T: PostgresDecodable>(_ type: T.Type = T.self) throws(PostgresError) -> T {
        let value = try row.decode(column, as: type)
        column += 1
        return value
    }

    /// Whether the next column is NULL.
    var isNull: Bool { row.isNull(column) }
}

extension ColumnSet where Value: PostgresDecodable & SendableMetatype {
    /// One column: the SQL expression `expression`.
    init(expression: String) {
        self.init([expression]) { reader throws(PostgresError) in try reader.next() }
    }
}
