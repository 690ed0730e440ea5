import Foundation
import Logging
import Postgres

/// What fault tests do to a private cluster besides stopping and starting it.
extension PostgresCluster {
    /// Turns `synchronous_commit` back on (the cluster turns it off for speed). Without it a
    /// COMMIT is acknowledged before its WAL reaches the kernel, so an immediate shutdown (a
    /// crash) may lose the last acknowledged transactions: a durability test must run with it.
    /// `fsync` stays off: only the database processes crash here, never the machine.
    public func requireDurableCommits() throws {
        try withAdministrationConnection { connection in
            try connection.execute(unsafeSQL: "ALTER SYSTEM SET synchronous_commit = on")
            _ = try connection.query("SELECT pg_reload_conf()")
        }
    }

    /// Terminates (`pg_terminate_backend`) every backend whose `application_name` is `name`;
    /// returns how many it terminated. Transactions in flight on them are rolled back.
    @discardableResult
    public func terminateBackends(applicationName name: String) throws -> Int {
        try withAdministrationConnection { connection in
            let rows = try connection.query(
                "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = \(name)")
            return try rows.first?.decode(0, as: Int.self) ?? 0
        }
    }

    /// Runs `body` on a fresh connection to the cluster's `postgres` database, closed afterwards.
    public func withAdministrationConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        var configuration = try PostgresConfiguration(connectionString: connectionString)
        configuration.applicationName = "locify-fault-test"
        configuration.connectTimeout = .seconds(10)
        let pool = ConnectionPool(configuration: configuration, size: 1, acquireTimeout: .seconds(30), logger: TestDatabase.logger)
        defer { pool.close() }
        return try pool.withConnection(body)
    }
}
