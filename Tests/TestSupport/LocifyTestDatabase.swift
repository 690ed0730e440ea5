import Foundation
import Locify
import Postgres

/// A fresh database with the project's migrations applied and the domain services wired to it.
public struct LocifyTestDatabase: Sendable {
    /// The migrated test database.
    public let database: TestDatabase
    /// The domain services on that database.
    public let services: LocifyServices

    /// The database's pool.
    public var pool: ConnectionPool { database.pool }

    /// Creates the database; `poolSize` connections; `settings` default to bucket `test-bucket`.
    public static func create(
        poolSize: Int = 4, settings: LocifySettings = LocifySettings(storageBucket: TestConstants.bucket),
        now: @escaping @Sendable () -> Timestamp = Timestamp.now
    ) throws -> LocifyTestDatabase {
        let database = try TestDatabase.create(migrationsDirectory: ProjectPaths.migrations, poolSize: poolSize)
        return LocifyTestDatabase(database: database, services: LocifyServices(pool: database.pool, settings: settings, now: now))
    }

    /// Closes the pool and drops the database.
    public func drop() {
        try? database.drop()
    }
}

/// Values shared by tests.
public enum TestConstants {
    /// The Storage bucket tests configure.
    public static let bucket = "test-bucket"
    /// The Firebase project id tests configure.
    public static let projectID = "locify-test"

    /// A fresh caller with a unique user id, as if its token was issued now.
    public static func newCaller(email: String? = nil, name: String? = nil) -> Caller {
        Caller(
            userID: "user-" + UUID().uuidString.lowercased().prefix(12), email: email, name: name,
            tokenIssuedAt: Int64(Date().timeIntervalSince1970))
    }
}
