import Foundation
import Testing
import TestSupport
import TestSupportDatabase

@testable import Postgres

@Suite("ConnectionPool across a PostgreSQL restart")
struct ConnectionPoolRestartTests {
    @Test(
        "while the server is down queries fail fast as unavailable; after it restarts the same pool works",
        arguments: [
            PostgresCluster.StopMode.fast, .immediate,
        ])
    func survivesRestart(mode: PostgresCluster.StopMode) throws {
        let cluster = try PostgresCluster.start()
        defer { cluster.remove() }
        var configuration = try PostgresConfiguration(connectionString: cluster.connectionString)
        configuration.connectTimeout = .seconds(2)
        let pool = ConnectionPool(configuration: configuration, size: 2, acquireTimeout: .seconds(10), logger: TestDatabase.logger)
        defer { pool.close() }
        try pool.warmUp()
        #expect(try pool.withConnection { try $0.query("SELECT \(1)").first?.decode(0, as: Int.self) } == 1)

        try cluster.stop(mode)
        let clock = ContinuousClock()
        for _ in 0..<4 {
            let start = clock.now
            let error = try #require(throws: PostgresError.self) {
                try pool.withConnection { try $0.query("SELECT \(1)") }
            }
            #expect(error.isUnavailable, "\(error.debugDescription)")
            #expect(start.duration(to: clock.now) < .seconds(30))
        }
        #expect(pool.statistics.inUse == 0)

        try cluster.startServer()
        #expect(try pool.withConnection { try $0.query("SELECT \(2)").first?.decode(0, as: Int.self) } == 2)
        let inTransaction = try pool.withTransaction { connection in
            try connection.query("SELECT \(3)").first?.decode(0, as: Int.self)
        }
        #expect(inTransaction == 3)
    }
}
