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

    @Test("an interpolated query is a fragment: its placeholders follow the binds before it, in order")
    func fragment() {
        let gate: PostgresQuery = "(u.valid_after < \(Int64(7)))"
        let tail = PostgresQuery(
            unsafeSQL: "FROM t WHERE a = $1 AND b = $2 AND c = $1 AND d = '$1' AND \"$2\" = 0 -- the user's café $2\n",
            binds: [
                PostgresBind("a"), PostgresBind(Int64(2)),
            ])
        let query: PostgresQuery = "SELECT \(gate), \(Int64(3)) \(tail) AND e = \(gate)"
        #expect(
            query.sql
                == "SELECT (u.valid_after < $1), $2 FROM t WHERE a = $3 AND b = $4 AND c = $3 AND d = '$1' AND \"$2\" = 0 -- the user's café $2\n AND e = (u.valid_after < $5)"
        )
        #expect(query.binds == [PostgresBind(Int64(7)), PostgresBind(Int64(3)), PostgresBind("a"), PostgresBind(Int64(2)), PostgresBind(Int64(7))])
        let alone: PostgresQuery = "\(tail)"
        #expect(alone == tail)
    }

    @Test("a prepended head leads the text and binds after the query, which keeps its text as is")
    func prepending() {
        let statement: PostgresQuery = "FROM t WHERE a = \("a") AND b = \(Int64(2)) AND d = '$1'"
        let query = statement.prepending("SELECT (u.valid_after < \(Int64(7))), \(Int64(3)), '$1' ")
        #expect(query.sql == "SELECT (u.valid_after < $3), $4, '$1' FROM t WHERE a = $1 AND b = $2 AND d = '$1'")
        #expect(query.binds == [PostgresBind("a"), PostgresBind(Int64(2)), PostgresBind(Int64(7)), PostgresBind(Int64(3))])
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
