import Foundation
import Logging
import Postgres
import Synchronization
import TestSupport

/// A fresh, isolated database for one test (or suite) on the server named by `DATABASE_URL`.
///
/// `scripts/test` provides that server (a throwaway cluster). Databases are created from
/// `template1`, or from a per-process template with the migrations already applied when a
/// migrations directory is given, so each test starts from the same schema in milliseconds.
public final class TestDatabase: Sendable {
    /// The database's name, `locify_test_<random hex>`.
    public let name: String
    /// How to reach the database.
    public let configuration: PostgresConfiguration
    /// A pool connected to the database, closed by `drop()`.
    public let pool: ConnectionPool

    /// The connection string of the database (`key='value'` form).
    public var connectionString: String { configuration.connectionString }

    private init(name: String, configuration: PostgresConfiguration, pool: ConnectionPool) {
        self.name = name
        self.configuration = configuration
        self.pool = pool
    }

    /// Creates a database (with the migrations of `migrationsDirectory` applied when given) and a
    /// pool of `poolSize` connections to it. Fails with a clear message when `DATABASE_URL` is unset.
    public static func create(
        migrationsDirectory: String? = nil,
        poolSize: Int = 4,
        acquireTimeout: Duration = .seconds(30)
    ) throws -> TestDatabase {
        let server = try serverConfiguration()
        let template = try migrationsDirectory.map { try templateDatabase(migratedWith: $0) }
        let name = "locify_test_" + randomSuffix()
        let templateClause = template.map { " TEMPLATE \($0)" } ?? ""
        try administrationPool().withConnection { connection in
            try connection.execute(unsafeSQL: "CREATE DATABASE \(name)\(templateClause)")
        }
        var configuration = server
        configuration.database = name
        let pool = ConnectionPool(configuration: configuration, size: poolSize, acquireTimeout: acquireTimeout, logger: testLogger)
        return TestDatabase(name: name, configuration: configuration, pool: pool)
    }

    /// Creates a database, runs `body` with it and drops it afterwards, whatever `body` did.
    public static func with<T>(
        migrationsDirectory: String? = nil,
        poolSize: Int = 4,
        _ body: (TestDatabase) throws -> T
    ) throws -> T {
        let database = try create(migrationsDirectory: migrationsDirectory, poolSize: poolSize)
        defer { try? database.drop() }
        return try body(database)
    }

    /// Closes the pool and drops the database (terminating any connection still open to it).
    public func drop() throws {
        pool.close()
        try Self.administrationPool().withConnection { connection in
            try connection.execute(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
        }
    }

    /// The server's configuration from `DATABASE_URL`.
    public static func serverConfiguration() throws -> PostgresConfiguration {
        guard let url = ProcessInfo.processInfo.environment["DATABASE_URL"], !url.isEmpty else {
            throw TestDatabaseError("DATABASE_URL is not set: run scripts/test")
        }
        var configuration = try PostgresConfiguration(connectionString: url)
        configuration.connectTimeout = .seconds(10)
        return configuration
    }

    /// The repository's `migrations/` folder, for `create(migrationsDirectory:)`.
    public static var projectMigrationsDirectory: String { ProjectPaths.migrations }

    /// A logger for tests: warnings and errors only, so test output stays readable.
    public static let logger: Logger = testLogger

    // MARK: - Shared state of the test process

    /// Connections to the server's own database, used to create and drop test databases.
    private static let administration = Mutex<ConnectionPool?>(nil)
    /// Template databases by migrations directory, created once per process.
    private static let templates = Mutex<[String: String]>([:])

    private static func administrationPool() throws -> ConnectionPool {
        let configuration = try serverConfiguration()
        return administration.withLock { pool in
            if let pool { return pool }
            let created = ConnectionPool(configuration: configuration, size: 2, acquireTimeout: .seconds(60), logger: testLogger)
            pool = created
            return created
        }
    }

    /// The name of a database with every migration of `directory` applied, created on first use.
    /// The lock is held while migrating so that concurrent first callers wait for one template.
    private static func templateDatabase(migratedWith directory: String) throws -> String {
        let key = URL(fileURLWithPath: directory).standardizedFileURL.path
        let administration = try administrationPool()
        let server = try serverConfiguration()
        return try templates.withLock { templates throws -> String in
            if let existing = templates[key] { return existing }
            let name = "locify_template_" + randomSuffix()
            try administration.withConnection { connection in
                try connection.execute(unsafeSQL: "CREATE DATABASE \(name)")
            }
            var configuration = server
            configuration.database = name
            let pool = ConnectionPool(configuration: configuration, size: 1, logger: testLogger)
            defer { pool.close() }
            _ = try MigrationRunner(directory: key, logger: testLogger).run(using: pool)
            pool.close()  // no session may stay connected to a template being copied
            templates[key] = name
            return name
        }
    }

    private static func randomSuffix() -> String {
        let value = UInt64.random(in: 0...UInt64.max)
        let hex = String(value, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}

/// A test-environment problem (no `DATABASE_URL`, no PostgreSQL binaries), with a clear message.
public struct TestDatabaseError: Error, CustomStringConvertible {
    /// What is wrong and how to fix it.
    public let description: String

    /// Wraps a message.
    public init(_ description: String) {
        self.description = description
    }
}

private let testLogger: Logger = {
    var logger = Logger(label: "locify.tests")
    logger.logLevel = .warning
    return logger
}()
