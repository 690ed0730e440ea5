import Foundation
import Synchronization
import Testing
import TestSupport
import TestSupportDatabase

@testable import Postgres

@Suite("ConnectionPool")
struct ConnectionPoolTests {
    struct BodyFailed: Error, Equatable {}

    static func makeTable(_ database: TestDatabase) throws {
        try database.pool.withConnection { connection in
            try connection.execute(unsafeSQL: "CREATE TABLE notes (id int4 PRIMARY KEY, body text NOT NULL)")
        }
    }

    static func noteCount(_ database: TestDatabase) throws -> Int {
        try database.pool.withConnection { connection in
            try connection.query("SELECT count(*) FROM notes").first?.decode(0, as: Int.self) ?? -1
        }
    }

    static func pool(for database: TestDatabase, size: Int, acquireTimeout: Duration = .seconds(30)) -> ConnectionPool {
        ConnectionPool(configuration: database.configuration, size: size, acquireTimeout: acquireTimeout, logger: TestDatabase.logger)
    }

    @Test("a transaction that returns normally is committed")
    func commit() throws {
        try TestDatabase.with { database in
            try Self.makeTable(database)
            let value = try database.pool.withTransaction { connection in
                try connection.query("INSERT INTO notes VALUES (\(Int32(1)), \("kept"))")
                return 7
            }
            #expect(value == 7)
            #expect(try Self.noteCount(database) == 1)
        }
    }

    @Test("a body that throws is rolled back and its error rethrown unchanged")
    func rollbackOnThrow() throws {
        try TestDatabase.with { database in
            try Self.makeTable(database)
            #expect(throws: BodyFailed()) {
                try database.pool.withTransaction { connection in
                    try connection.query("INSERT INTO notes VALUES (\(Int32(1)), \("lost"))")
                    throw BodyFailed()
                }
            }
            #expect(try Self.noteCount(database) == 0)
        }
    }

    @Test("a SQL error inside the body rolls back the earlier statements and is rethrown")
    func rollbackOnSQLError() throws {
        try TestDatabase.with { database in
            try Self.makeTable(database)
            let error = try #require(throws: PostgresError.self) {
                try database.pool.withTransaction { connection in
                    try connection.query("INSERT INTO notes VALUES (\(Int32(1)), \("lost"))")
                    try connection.query("INSERT INTO notes VALUES (\(Int32(1)), \("duplicate"))")
                }
            }
            #expect(error.sqlState == "23505")
            #expect(try Self.noteCount(database) == 0)
        }
    }

    @Test("a SQL error swallowed by the body still rolls back, reported as 25P02")
    func swallowedError() throws {
        try TestDatabase.with { database in
            try Self.makeTable(database)
            let error = try #require(throws: PostgresError.self) {
                try database.pool.withTransaction { connection in
                    try connection.query("INSERT INTO notes VALUES (\(Int32(1)), \("lost"))")
                    _ = try? connection.query("SELECT 1 / \(0)")
                }
            }
            #expect(error.sqlState == "25P02")
            #expect(try Self.noteCount(database) == 0)
        }
    }

    @Test("after a failed transaction the same connection is usable and idle")
    func connectionUsableAfterFailure() throws {
        try TestDatabase.with { database in
            try Self.makeTable(database)
            let pool = Self.pool(for: database, size: 1)
            defer { pool.close() }
            let firstPID = try pool.withConnection { $0.backendProcessID }
            #expect(throws: PostgresError.self) {
                try pool.withTransaction { connection in
                    try connection.query("INSERT INTO notes VALUES (\(Int32(1)), \("x"))")
                    try connection.query("SELECT 1 / \(0)")
                }
            }
            // A connection handed back in the middle of a transaction is rolled back too.
            try pool.withConnection { connection in
                try connection.execute(unsafeSQL: "BEGIN")
                try connection.query("INSERT INTO notes VALUES (\(Int32(2)), \("y"))")
                _ = try? connection.query("SELECT 1 / \(0)")
            }
            let (pid, status, count) = try pool.withConnection { connection in
                (
                    connection.backendProcessID, connection.transactionStatus,
                    try connection.query("SELECT count(*) FROM notes").first?.decode(0, as: Int.self)
                )
            }
            #expect(pid == firstPID)
            #expect(status == .idle)
            #expect(count == 0)
        }
    }

    @Test("isolation level and read-only mode reach the server")
    func isolationAndReadOnly() throws {
        try TestDatabase.with { database in
            try Self.makeTable(database)
            let level = try database.pool.withTransaction(isolation: .serializable) { connection in
                try connection.query("SHOW transaction_isolation").first?.decode(0, as: String.self)
            }
            #expect(level == "serializable")
            let repeatable = try database.pool.withTransaction(isolation: .repeatableRead, readOnly: true) { connection in
                try connection.query("SELECT current_setting('transaction_isolation'), current_setting('transaction_read_only')")
                    .first.map { [try $0.decode(0, as: String.self), try $0.decode(1, as: String.self)] }
            }
            #expect(repeatable == ["repeatable read", "on"])
            let error = try #require(throws: PostgresError.self) {
                try database.pool.withTransaction(readOnly: true) { connection in
                    try connection.query("INSERT INTO notes VALUES (\(Int32(1)), \("x"))")
                }
            }
            #expect(error.sqlState == "25006")
        }
    }

    @Test("a serialization failure reruns the whole body, up to maxAttempts runs")
    func retriesSerializationFailures() throws {
        try TestDatabase.with { database in
            let raise = "DO $$ BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = '40001'; END $$"
            let attempts = Mutex(0)
            let value = try database.pool.withTransaction { connection in
                let attempt = attempts.withLock { count in
                    count += 1
                    return count
                }
                if attempt == 1 {
                    try connection.execute(unsafeSQL: raise)
                }
                return attempt
            }
            #expect(value == 2)
            attempts.withLock { $0 = 0 }
            let error = try #require(throws: PostgresError.self) {
                try database.pool.withTransaction(maxAttempts: 2) { connection in
                    attempts.withLock { $0 += 1 }
                    try connection.execute(unsafeSQL: raise)
                }
            }
            #expect(error.sqlState == "40001")
            #expect(attempts.withLock { $0 } == 2)
        }
    }

    @Test("an exhausted pool fails the next acquire with poolTimeout after acquireTimeout")
    func exhaustionTimesOut() throws {
        try TestDatabase.with { database in
            let pool = Self.pool(for: database, size: 1, acquireTimeout: .milliseconds(200))
            defer { pool.close() }
            let holding = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let holder = BackgroundThread {
                try pool.withConnection { _ in
                    holding.signal()
                    release.wait()
                }
            }
            #expect(holding.wait(timeout: .now() + 60) == .success)
            let clock = ContinuousClock()
            let start = clock.now
            let error = try #require(throws: PostgresError.self) {
                try pool.withConnection { _ in }
            }
            let elapsed = start.duration(to: clock.now)
            #expect(error.kind == .poolTimeout)
            #expect(error.isUnavailable)
            #expect(elapsed >= .milliseconds(100))  // it did wait, roughly acquireTimeout
            #expect(elapsed < .seconds(30))
            #expect(pool.statistics.waiting == 0)
            release.signal()
            try holder.join()
            #expect(try pool.withConnection { try $0.query("SELECT \(1)").first?.decode(0, as: Int.self) } == 1)
        }
    }

    @Test("a waiting caller gets the connection as soon as it is returned")
    func waiterIsServed() throws {
        try TestDatabase.with { database in
            let pool = Self.pool(for: database, size: 1)
            defer { pool.close() }
            let holding = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let holder = BackgroundThread {
                try pool.withConnection { connection in
                    holding.signal()
                    release.wait()
                    return connection.backendProcessID
                }
            }
            #expect(holding.wait(timeout: .now() + 60) == .success)
            let waiter = BackgroundThread {
                try pool.withConnection { $0.backendProcessID }
            }
            #expect(eventually { pool.statistics.waiting == 1 })
            #expect(pool.statistics == PoolStatistics(inUse: 1, idle: 0, waiting: 1, size: 1))
            release.signal()
            let holderPID = try holder.join()
            #expect(try waiter.join() == holderPID)
        }
    }

    @Test("statistics count connections in use, idle and waiting")
    func statistics() throws {
        try TestDatabase.with { database in
            let pool = Self.pool(for: database, size: 3)
            defer { pool.close() }
            #expect(pool.statistics == PoolStatistics(inUse: 0, idle: 0, waiting: 0, size: 3))
            try pool.withConnection { _ in
                #expect(pool.statistics == PoolStatistics(inUse: 1, idle: 0, waiting: 0, size: 3))
                try pool.withConnection { _ in
                    #expect(pool.statistics == PoolStatistics(inUse: 2, idle: 0, waiting: 0, size: 3))
                }
                #expect(pool.statistics == PoolStatistics(inUse: 1, idle: 1, waiting: 0, size: 3))
            }
            #expect(pool.statistics == PoolStatistics(inUse: 0, idle: 2, waiting: 0, size: 3))
            try pool.warmUp()
            #expect(pool.statistics == PoolStatistics(inUse: 0, idle: 3, waiting: 0, size: 3))
        }
    }

    @Test("a pooled connection terminated by the server is replaced and the next query works")
    func brokenConnectionReplaced() throws {
        try TestDatabase.with { database in
            let pool = Self.pool(for: database, size: 1)
            defer { pool.close() }
            let oldPID = try pool.withConnection { connection in
                try connection.query("SELECT \(1)")
                return connection.backendProcessID
            }
            let admin = try PostgresConnection.connect(database.configuration, logger: TestDatabase.logger)
            try admin.query("SELECT pg_terminate_backend(\(oldPID))")
            let gone = try eventually {
                try admin.query("SELECT count(*) FROM pg_stat_activity WHERE pid = \(oldPID)").first?.decode(0, as: Int.self) == 0
            }
            #expect(gone)
            let (newPID, value) = try pool.withConnection { connection in
                (connection.backendProcessID, try connection.query("SELECT \(1)").first?.decode(0, as: Int.self))
            }
            #expect(newPID != oldPID)
            #expect(value == 1)
            #expect(pool.statistics == PoolStatistics(inUse: 0, idle: 1, waiting: 0, size: 1))
        }
    }

    @Test("a connection lost during a query is discarded; the pool opens a new one")
    func lostDuringQuery() throws {
        try TestDatabase.with { database in
            let pool = Self.pool(for: database, size: 1)
            defer { pool.close() }
            let error = try #require(throws: PostgresError.self) {
                try pool.withConnection { connection in
                    try connection.query("SELECT pg_terminate_backend(pg_backend_pid())")
                }
            }
            #expect(error.isUnavailable)
            #expect(pool.statistics == PoolStatistics(inUse: 0, idle: 0, waiting: 0, size: 1))
            #expect(try pool.withConnection { try $0.query("SELECT \(2)").first?.decode(0, as: Int.self) } == 2)
        }
    }

    @Test("a closed pool refuses acquires and wakes its waiters with poolClosed")
    func close() throws {
        try TestDatabase.with { database in
            let pool = Self.pool(for: database, size: 1)
            let holding = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let holder = BackgroundThread {
                try pool.withConnection { _ in
                    holding.signal()
                    release.wait()
                }
            }
            #expect(holding.wait(timeout: .now() + 60) == .success)
            let waiter = BackgroundThread { try pool.withConnection { _ in } }
            #expect(eventually { pool.statistics.waiting == 1 })
            pool.close()
            let waiterError = try #require(throws: PostgresError.self) { try waiter.join() }
            #expect(waiterError.kind == .poolClosed)
            release.signal()
            try holder.join()
            #expect(pool.statistics == PoolStatistics(inUse: 0, idle: 0, waiting: 0, size: 1))
            let error = try #require(throws: PostgresError.self) { try pool.withConnection { _ in } }
            #expect(error.kind == .poolClosed)
        }
    }

    @Test("many threads sharing a small pool all get served and every connection comes back")
    func contention() throws {
        try TestDatabase.with { database in
            try Self.makeTable(database)
            let pool = Self.pool(for: database, size: 2)
            defer { pool.close() }
            let threads = (0..<8).map { thread in
                BackgroundThread {
                    for index in 0..<25 {
                        try pool.withTransaction { connection in
                            try connection.query("INSERT INTO notes VALUES (\(Int32(thread * 100 + index)), \("n"))")
                        }
                    }
                }
            }
            for thread in threads {
                try thread.join()
            }
            #expect(try Self.noteCount(database) == 200)
            let statistics = pool.statistics
            #expect(statistics.inUse == 0)
            #expect(statistics.waiting == 0)
            #expect(statistics.idle <= 2)
        }
    }
}
