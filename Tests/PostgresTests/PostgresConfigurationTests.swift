import Testing

@testable import Postgres

@Suite("PostgresConfiguration")
struct PostgresConfigurationTests {
    @Test("parses a postgres:// URI")
    func uri() throws {
        let configuration = try PostgresConfiguration(connectionString: "postgres://alice:secret@db.example:6543/locify?sslmode=disable")
        #expect(configuration.value(of: "host") == "db.example")
        #expect(configuration.value(of: "port") == "6543")
        #expect(configuration.value(of: "user") == "alice")
        #expect(configuration.database == "locify")
        #expect(configuration.value(of: "sslmode") == "disable")
    }

    @Test("parses the key=value form")
    func keyValue() throws {
        let configuration = try PostgresConfiguration(connectionString: "host=127.0.0.1 port=5432 dbname='my db' user=postgres")
        #expect(configuration.database == "my db")
        #expect(configuration.value(of: "port") == "5432")
    }

    @Test("an invalid connection string is an invalidConfiguration error with libpq's reason")
    func invalid() {
        #expect {
            try PostgresConfiguration(connectionString: "host=localhost nonsense_option=1")
        } throws: { error in
            guard let error = error as? PostgresError else { return false }
            return error.kind == .invalidConfiguration && error.message.contains("nonsense_option")
        }
        #expect(throws: PostgresError.self) {
            try PostgresConfiguration(connectionString: "postgresql://user@[::1/db")
        }
        #expect(throws: PostgresError.self) {
            try PostgresConfiguration(connectionString: "postgres://host:notaport/db")
        }
    }

    @Test("the description never shows the password; the connection string round-trips quoting")
    func rendering() throws {
        var configuration = try PostgresConfiguration(connectionString: "postgresql://bob:p%40ss'w@localhost/app")
        #expect(!configuration.description.contains("p@ss"))
        #expect(configuration.description.contains("dbname=app"))
        configuration.database = "other"
        let reparsed = try PostgresConfiguration(connectionString: configuration.connectionString)
        #expect(reparsed.database == "other")
        #expect(reparsed.value(of: "password") == "p@ss'w")
    }
}
