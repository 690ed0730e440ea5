import Foundation
import Testing
import TestSupport
import TestSupportDatabase

@testable import Postgres

@Suite("PostgresConnection")
struct PostgresConnectionTests {
    /// How often the server has executed the prepared statement whose text is `sql` on this session.
    static func executions(of sql: String, on connection: PostgresConnection) throws -> [Int] {
        try connection.query("SELECT generic_plans + custom_plans FROM pg_prepared_statements WHERE statement = \(sql)")
            .map { try $0.decode(0, as: Int.self) }
    }

    @Test("the same SQL runs as one prepared statement executed again, not prepared twice")
    func preparedStatementReused() throws {
        try TestDatabase.with { database in
            try database.pool.withConnection { connection in
                let sql = "SELECT $1::int8 + 1"
                let before = connection.preparedStatementCount
                for value in 1...3 {
                    let row = try #require(try connection.query(PostgresQuery(unsafeSQL: sql, binds: [PostgresBind(value)])).first)
                    #expect(try row.decode(0, as: Int.self) == value + 1)
                }
                #expect(try Self.executions(of: sql, on: connection) == [3])
                #expect(connection.preparedStatementCount == before + 2)  // this one and the catalog query
            }
        }
    }

    @Test("a statement dropped on the server (DEALLOCATE ALL) is prepared again transparently")
    func reprepareAfterDeallocate() throws {
        try TestDatabase.with { database in
            try database.pool.withConnection { connection in
                let query: PostgresQuery = "SELECT \(5) * 2"
                #expect(try connection.query(query).first?.decode(0, as: Int.self) == 10)
                try connection.execute(unsafeSQL: "DEALLOCATE ALL")
                #expect(try connection.query(query).first?.decode(0, as: Int.self) == 10)
                #expect(try Self.executions(of: query.sql, on: connection) == [1])
            }
        }
    }

    @Test("a cached statement whose table changed shape is prepared again")
    func reprepareAfterSchemaChange() throws {
        try TestDatabase.with { database in
            try database.pool.withConnection { connection in
                try connection.execute(unsafeSQL: "CREATE TABLE shape (a int4); INSERT INTO shape VALUES (1)")
                let query: PostgresQuery = "SELECT * FROM shape WHERE a = \(Int32(1))"
                #expect(try connection.query(query).columns.count == 1)
                try connection.execute(unsafeSQL: "ALTER TABLE shape ADD COLUMN b text DEFAULT 'x'")
                let rows = try connection.query(query)
                #expect(rows.columns.map(\.name) == ["a", "b"])
                #expect(try rows.first?.decode(column: "b", as: String.self) == "x")
            }
        }
    }

    @Test("the statement cache is bounded and evicted statements are deallocated on the server")
    func boundedCache() throws {
        try TestDatabase.with { database in
            try database.pool.withConnection { connection in
                let capacity = PostgresConnection.statementCacheCapacity
                for index in 0..<(capacity + 20) {
                    try connection.query(PostgresQuery(unsafeSQL: "SELECT \(index)"))
                }
                #expect(connection.preparedStatementCount == capacity)
                let onServer = try #require(try connection.query("SELECT count(*) FROM pg_prepared_statements").first)
                #expect(try onServer.decode(0, as: Int.self) <= capacity + 1)
                #expect(try connection.query("SELECT 0").first?.decode(0, as: Int.self) == 0)
            }
        }
    }

    @Test("a unique violation reports SQLSTATE 23505, the constraint, table and detail")
    func uniqueViolation() throws {
        try TestDatabase.with { database in
            try database.pool.withConnection { connection in
                try connection.execute(unsafeSQL: "CREATE TABLE people (id int4 PRIMARY KEY, email text CONSTRAINT people_email_key UNIQUE)")
                try connection.query("INSERT INTO people VALUES (\(Int32(1)), \("secret@example.com"))")
                let error = try #require(throws: PostgresError.self) {
                    try connection.query("INSERT INTO people VALUES (\(Int32(2)), \("secret@example.com"))")
                }
                #expect(error.kind == .server)
                #expect(error.sqlState == "23505")
                #expect(error.constraint == "people_email_key")
                #expect(error.table == "people")
                #expect(error.detail?.contains("secret@example.com") == true)
                #expect(!error.isUnavailable)
                #expect(!connection.isBroken)
                #expect(try connection.query("SELECT count(*) FROM people").first?.decode(0, as: Int.self) == 1)
            }
        }
    }

    @Test("a NOT NULL violation names the column; a syntax error is 42601")
    func otherServerErrors() throws {
        try TestDatabase.with { database in
            try database.pool.withConnection { connection in
                try connection.execute(unsafeSQL: "CREATE TABLE items (name text NOT NULL)")
                let missing: String? = nil
                let notNull = try #require(throws: PostgresError.self) {
                    try connection.query("INSERT INTO items (name) VALUES (\(missing))")
                }
                #expect(notNull.sqlState == "23502")
                #expect(notNull.column == "name")
                let syntax = try #require(throws: PostgresError.self) { try connection.execute(unsafeSQL: "SELEC 1") }
                #expect(syntax.sqlState == "42601")
                let prepared = try #require(throws: PostgresError.self) { try connection.query("SELEC \(1)") }
                #expect(prepared.sqlState == "42601")
            }
        }
    }

    @Test("description is generic: no SQL, no values, no server message; debugDescription has them")
    func descriptionDoesNotLeak() throws {
        try TestDatabase.with { database in
            try database.pool.withConnection { connection in
                try connection.execute(unsafeSQL: "CREATE TABLE secrets (value text CONSTRAINT secrets_value_key UNIQUE)")
                try connection.query("INSERT INTO secrets VALUES (\("hunter2"))")
                let error = try #require(throws: PostgresError.self) {
                    try connection.query("INSERT INTO secrets VALUES (\("hunter2"))")
                }
                for leaked in ["hunter2", "secrets", "INSERT", "duplicate", error.message] {
                    #expect(!error.description.contains(leaked))
                    #expect(!"\(error)".contains(leaked))
                }
                #expect(error.description.contains("23505"))
                #expect(error.debugDescription.contains(error.message))
                #expect(error.debugDescription.contains("hunter2"))
            }
        }
    }

    @Test("execute runs several statements in one simple query")
    func multiStatement() throws {
        try TestDatabase.with { database in
            try database.pool.withConnection { connection in
                try connection.execute(unsafeSQL: "CREATE TABLE m (v int4); INSERT INTO m VALUES (1); INSERT INTO m VALUES (2);")
                #expect(try connection.query("SELECT sum(v)::int8 FROM m").first?.decode(0, as: Int.self) == 3)
            }
        }
    }

    @Test("a session is set up for UTC and reports application_name locify")
    func sessionSetup() throws {
        try TestDatabase.with { database in
            try database.pool.withConnection { connection in
                let row = try #require(try connection.query("SELECT current_setting('TimeZone'), current_setting('application_name')").first)
                #expect(try row.decode(0, as: String.self) == "UTC")
                #expect(try row.decode(1, as: String.self) == "locify")
            }
        }
    }

    @Test("connecting where no server listens fails fast with an unavailable connectionFailed error")
    func connectionRefused() throws {
        var configuration = try PostgresConfiguration(connectionString: "host=127.0.0.1 port=1 user=postgres dbname=postgres")
        configuration.connectTimeout = .seconds(2)
        let error = try #require(throws: PostgresError.self) {
            try PostgresConnection.connect(configuration, logger: TestDatabase.logger)
        }
        #expect(error.kind == .connectionFailed)
        #expect(error.isUnavailable)
    }

    @Test("connecting to a missing database is a connectionFailed error")
    func missingDatabase() throws {
        var configuration = try TestDatabase.serverConfiguration()
        configuration.database = "locify_does_not_exist"
        let error = try #require(throws: PostgresError.self) {
            try PostgresConnection.connect(configuration, logger: TestDatabase.logger)
        }
        #expect(error.kind == .connectionFailed)
        #expect(error.message.contains("locify_does_not_exist"))
    }

    @Test("a connection whose backend is terminated is reported lost and marked broken")
    func terminatedBackend() throws {
        try TestDatabase.with { database in
            let connection = try PostgresConnection.connect(database.configuration, logger: TestDatabase.logger)
            let error = try #require(throws: PostgresError.self) {
                try connection.query("SELECT pg_terminate_backend(pg_backend_pid())")
            }
            #expect(error.kind == .connectionLost)
            #expect(error.isUnavailable)
            #expect(connection.isBroken)
            let next = try #require(throws: PostgresError.self) { try connection.query("SELECT 1") }
            #expect(next.kind == .connectionLost)
        }
    }

    @Test("isUnavailable covers connection errors, SQLSTATE classes 08, 53, 57P01-57P03 and 25006 (a read-only standby)")
    func unavailableClassification() {
        func server(_ state: String) -> PostgresError { PostgresError(kind: .server, sqlState: state, message: "") }
        #expect(server("08006").isUnavailable)
        #expect(server("53300").isUnavailable)
        #expect(server("57P01").isUnavailable)
        #expect(server("57P03").isUnavailable)
        #expect(server("25006").isUnavailable)
        #expect(!server("25001").isUnavailable)
        #expect(!server("57014").isUnavailable)
        #expect(!server("23505").isUnavailable)
        #expect(PostgresError(kind: .poolTimeout, message: "").isUnavailable)
        #expect(PostgresError(kind: .poolClosed, message: "").isUnavailable)
        #expect(!PostgresError(kind: .decoding, message: "").isUnavailable)
    }
}
