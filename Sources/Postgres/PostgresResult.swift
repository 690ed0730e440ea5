internal import CLibPQ

/// Owns one `PGresult` and frees it when the last `PostgresRows`/`PostgresRow` referring to it goes.
final class PostgresResult {
    let handle: OpaquePointer
    let rowCount: Int
    let columnCount: Int
    /// Column name -> index, built on the first lookup by name (exact, case-sensitive names).
    private var columnIndexes: [String: Int]?

    init(_ handle: OpaquePointer) {
        self.handle = handle
        rowCount = Int(PQntuples(handle))
        columnCount = Int(PQnfields(handle))
    }

    deinit {
        PQclear(handle)
    }

    /// The rows affected by an INSERT/UPDATE/DELETE (or returned by a SELECT), 0 when not reported.
    var affectedRowCount: Int {
        guard let tuples = PQcmdTuples(handle) else { return 0 }
        return Int(String(cString: tuples)) ?? 0
    }

    func columnName(_ column: Int) -> String {
        guard let name = PQfname(handle, Int32(column)) else { return "#\(column)" }
        return String(cString: name)
    }

    func columnType(_ column: Int) -> PostgresDataType {
        PostgresDataType(rawValue: PQftype(handle, Int32(column)))
    }

    func columnIndex(named name: String) -> Int? {
        if let columnIndexes {
            return columnIndexes[name]
        }
        var indexes: [String: Int] = [:]
        indexes.reserveCapacity(columnCount)
        for column in 0..<columnCount {
            let name = columnName(column)
            if indexes[name] == nil {
                indexes[name] = column
            }
        }
        columnIndexes = indexes
        return indexes[name]
    }

    func isNull(row: Int, column: Int) -> Bool {
        PQgetisnull(handle, Int32(row), Int32(column)) != 0
    }

    /// The cell's bytes, valid while this result is alive.
    func bytes(row: Int, column: Int) -> UnsafeRawBufferPointer {
        let length = Int(PQgetlength(handle, Int32(row), Int32(column)))
        guard let value = PQgetvalue(handle, Int32(row), Int32(column)) else {
            return UnsafeRawBufferPointer(start: nil, count: 0)
        }
        return UnsafeRawBufferPointer(start: UnsafeRawPointer(value), count: length)
    }
}
