import Foundation
import Testing

@testable import Postgres

@Suite("PostgresQuery interpolation")
struct PostgresQueryTests {
    @Test("each interpolated value becomes a numbered placeholder and a typed bind")
    func placeholders() {
        let id = UUID()
        let query: PostgresQuery = "SELECT * FROM t WHERE id = \(id) AND name = \("x") AND n > \(3)"
        #expect(query.sql == "SELECT * FROM t WHERE id = $1 AND name = $2 AND n > $3")
        #expect(query.binds.map(\.dataType) == [.uuid, .text, .int8])
        #expect(query.binds[1].bytes == Array("x".utf8))
    }

    @Test("a nil optional binds a NULL of the wrapped type")
    func nullBind() {
        let missing: String? = nil
        let query: PostgresQuery = "SELECT \(missing)"
        #expect(query.sql == "SELECT $1")
        #expect(query.binds == [PostgresBind(dataType: .text, bytes: nil)])
    }

    @Test("unsafeSQL fragments are spliced as text without binds")
    func unsafeFragment() {
        let order = "name ASC"
        let query: PostgresQuery = "SELECT 1 ORDER BY \(unsafeSQL: order) LIMIT \(10)"
        #expect(query.sql == "SELECT 1 ORDER BY name ASC LIMIT $1")
        #expect(query.binds.count == 1)
    }

    @Test("a value that looks like SQL stays a bind and never reaches the text")
    func injectionStaysBound() {
        let hostile = "'; DROP TABLE x; --"
        let query: PostgresQuery = "SELECT \(hostile)"
        #expect(query.sql == "SELECT $1")
        #expect(!query.sql.contains("DROP"))
    }

    @Test("a string literal is a query without binds")
    func literal() {
        let query: PostgresQuery = "SELECT 1"
        #expect(query == PostgresQuery(unsafeSQL: "SELECT 1"))
    }
}
