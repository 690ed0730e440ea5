import Foundation
import Locify
import LocifyRules
import Postgres
import Primitives
import TestSupport
import TestSupportDatabase

/// A fresh database with the project's migrations applied and the domain services wired to it.
struct LocifyTestDatabase: Sendable {
    /// The migrated test database.
    let database: TestDatabase
    /// The domain services on that database.
    let services: LocifyServices

    /// The database's pool.
    var pool: ConnectionPool { database.pool }

    /// Creates the database; `poolSize` connections; `settings` default to bucket `test-bucket`.
    static func create(
        poolSize: Int = 4, settings: LocifySettings = LocifySettings(storageBucket: TestConstants.bucket),
        clock: WallClock = .system
    ) throws -> LocifyTestDatabase {
        let database = try TestDatabase.create(migrationsDirectory: ProjectPaths.migrations, poolSize: poolSize)
        return LocifyTestDatabase(database: database, services: LocifyServices(pool: database.pool, settings: settings, clock: clock))
    }

    /// Closes the pool and drops the database.
    func drop() {
        try? database.drop()
    }
}

extension TestConstants {
    /// A fresh caller with a unique user id, as if its token was issued now.
    static func newCaller(email: String? = nil, name: String? = nil) -> Caller {
        Caller(
            userID: "user-" + UUID().uuidString.lowercased().prefix(12), email: email, name: name,
            tokenIssuedAt: Int64(Date().timeIntervalSince1970))
    }
}
