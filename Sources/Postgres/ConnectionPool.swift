import Dispatch
import Logging
import Primitives
import Synchronization

/// A bounded pool of connections, opened lazily, shared by the worker threads; calls block.
///
/// A caller waits at most `acquireTimeout` for a connection (`.poolTimeout`). Broken connections
/// are dropped, idle ones are checked before use, and a replacement is opened on the next acquire,
/// so the pool recovers by itself after a database restart. While the database is down, every
/// acquire fails within `connectTimeout` with `.connectionFailed`.
public final class ConnectionPool: Sendable {
    /// The most connections this pool opens.
    public let size: Int
    /// How long `withConnection` waits for a free connection before `.poolTimeout`.
    public let acquireTimeout: Duration
    /// Where and how connections are opened.
    public let configuration: PostgresConfiguration
    private let logger: Logger
    private let state: Mutex<State>

    /// Creates an empty pool; no connection is opened until one is needed (or `warmUp` is called).
    /// - Parameters:
    ///   - size: the most connections open at once (at least 1).
    ///   - acquireTimeout: how long a caller waits for a free connection, default 5 seconds.
    public init(configuration: PostgresConfiguration, size: Int, acquireTimeout: Duration = .seconds(5), logger: Logger) {
        self.configuration = configuration
        self.size = max(1, size)
        self.acquireTimeout = acquireTimeout
        self.logger = logger
        self.state = Mutex(State())
    }

    /// Whether a connection of the pool answers a trivial statement now (the readiness check).
    public func isReachable() -> Bool {
        (try? withConnection { connection in try connection.query("SELECT 1") }) != nil
    }

    /// Lends a connection to `body` and takes it back afterwards, whatever happens. A connection
    /// returned inside a transaction is rolled back; a broken one is discarded.
    @discardableResult
    public func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        let lease = try acquire()
        defer { release(lease) }
        return try body(lease.connection)
    }

    /// Runs `body` in a transaction: `BEGIN` (with the isolation level and access mode), the body,
    /// `COMMIT`. On any error it rolls back and rethrows the original error unchanged.
    ///
    /// When the transaction fails with a serialization failure (40001) or a deadlock (40P01), the
    /// whole body runs again on a fresh transaction, up to `maxAttempts` runs in all (default 3);
    /// so the body must have no effects outside the database. A body that catches a SQL error and
    /// returns normally leaves an aborted transaction: it is rolled back and SQLSTATE 25P02 thrown.
    /// Do not start a second transaction on the same pool from inside `body`: it needs another
    /// connection and can exhaust the pool.
    @discardableResult
    public func withTransaction<T>(
        isolation: TransactionIsolation = .readCommitted,
        readOnly: Bool = false,
        maxAttempts: Int = 3,
        _ body: (PostgresConnection) throws -> T
    ) throws -> T {
        let begin = isolation.beginStatement(readOnly: readOnly)
        var attempt = 1
        while true {
            do {
                return try withConnection { connection in
                    try Self.runTransaction(on: connection, begin: begin, body)
                }
            } catch let error as PostgresError where error.isRetryableTransactionFailure && attempt < maxAttempts {
                attempt += 1
                logger.debug("retrying a transaction", metadata: ["sqlstate": "\(error.sqlState ?? "")", "attempt": "\(attempt)"])
            }
        }
    }

    /// The current usage, for metrics.
    public var statistics: PoolStatistics {
        state.withLock { state in
            PoolStatistics(inUse: state.inUse, idle: state.idle.count, waiting: state.waiters.count, size: size)
        }
    }

    /// Opens connections until `count` (default: the pool size) are open, so the first requests
    /// need not wait for connecting; fails with the first connection error.
    public func warmUp(connections count: Int? = nil) throws(PostgresError) {
        let target = min(count ?? size, size)
        let slots = state.withLock { state -> Int in
            let slots = state.closed ? 0 : max(0, target - state.openCount)
            state.openCount += slots
            state.inUse += slots
            return slots
        }
        var opened: [Lease] = []
        var failure: PostgresError?
        for _ in 0..<slots {
            if failure == nil {
                do {
                    opened.append(Lease(try PostgresConnection.connect(configuration, logger: logger)))
                    continue
                } catch {
                    failure = error
                }
            }
            releaseSlot()
        }
        for lease in opened {
            release(lease)
        }
        if let failure { throw failure }
    }

    /// Closes idle connections, fails waiting and future acquires with `.poolClosed`; connections
    /// still lent out are closed when they come back.
    public func close() {
        let (idle, waiters) = state.withLock { state -> ([Lease], [Waiter]) in
            state.closed = true
            let idle = state.idle
            state.idle.removeAll()
            state.openCount -= idle.count
            let waiters = state.waiters
            state.waiters.removeAll()
            for waiter in waiters {
                state.grants[waiter.id] = .closed
            }
            return (idle, waiters)
        }
        for waiter in waiters {
            waiter.semaphore.signal()
        }
        _ = idle  // the connections close here, outside the lock
    }

    // MARK: - Acquire and release

    /// Hands a connection from the pool's lock to the one thread that uses it.
    /// safe because: a leased connection is reachable from exactly one place at a time (the pool's
    /// idle list, a grant, or the borrowing thread), so it is never used by two threads at once.
    struct Lease: @unchecked Sendable {
        let connection: PostgresConnection
        init(_ connection: PostgresConnection) { self.connection = connection }
    }

    private enum Grant: Sendable {
        case connection(Lease)
        /// Permission to open a new connection in a slot another caller gave up.
        case slot
        case closed
    }

    private struct Waiter: Sendable {
        let id: UInt64
        let semaphore: DispatchSemaphore
    }

    private struct State: ~Copyable {
        var idle: [Lease] = []
        /// Connections open or being opened, lent or idle.
        var openCount = 0
        /// Connections lent out or being opened for a caller.
        var inUse = 0
        var waiters: [Waiter] = []
        var grants: [UInt64: Grant] = [:]
        var nextWaiterID: UInt64 = 0
        var closed = false
    }

    private enum Decision {
        case use(Lease)
        case open
        case wait(Waiter)
        case closed
    }

    private func acquire() throws(PostgresError) -> Lease {
        let decision = state.withLock { state -> Decision in
            if state.closed { return .closed }
            if let lease = state.idle.popLast() {
                state.inUse += 1
                return .use(lease)
            }
            if state.openCount < size {
                state.openCount += 1
                state.inUse += 1
                return .open
            }
            let waiter = Waiter(id: state.nextWaiterID, semaphore: DispatchSemaphore(value: 0))
            state.nextWaiterID += 1
            state.waiters.append(waiter)
            return .wait(waiter)
        }
        switch decision {
        case .use(let lease):
            return try useOrReplace(lease)
        case .open:
            return try openInSlot()
        case .closed:
            throw Self.closedError
        case .wait(let waiter):
            switch try wait(for: waiter) {
            case .connection(let lease):
                return try useOrReplace(lease)
            case .slot:
                return try openInSlot()
            case .closed:
                throw Self.closedError
            }
        }
    }

    private func wait(for waiter: Waiter) throws(PostgresError) -> Grant {
        let nanoseconds = max(0, acquireTimeout.nanoseconds)
        _ = waiter.semaphore.wait(timeout: .now() + .nanoseconds(Int(clamping: nanoseconds)))
        let grant = state.withLock { state -> Grant? in
            if let grant = state.grants.removeValue(forKey: waiter.id) {
                return grant
            }
            state.waiters.removeAll { $0.id == waiter.id }
            return nil
        }
        if let grant { return grant }
        throw PostgresError(kind: .poolTimeout, message: "no database connection became free within \(acquireTimeout)")
    }

    /// Returns an idle connection after checking it is still open, or opens a replacement.
    private func useOrReplace(_ lease: Lease) throws(PostgresError) -> Lease {
        if lease.connection.checkAliveWhileIdle() {
            return lease
        }
        logger.info("discarding a closed postgres connection")
        return try openInSlot()
    }

    /// Opens a connection in a slot already counted as open and in use; gives the slot up on failure.
    private func openInSlot() throws(PostgresError) -> Lease {
        do {
            return Lease(try PostgresConnection.connect(configuration, logger: logger))
        } catch {
            releaseSlot()
            logger.warning("could not open a postgres connection", metadata: ["error": "\(error.debugDescription)"])
            throw error
        }
    }

    /// Gives up a slot that holds no connection: to the first waiter, or back to the pool.
    private func releaseSlot() {
        let waiter = state.withLock { state -> Waiter? in
            if !state.closed, !state.waiters.isEmpty {
                let waiter = state.waiters.removeFirst()
                state.grants[waiter.id] = .slot
                return waiter
            }
            state.openCount -= 1
            state.inUse -= 1
            return nil
        }
        waiter?.semaphore.signal()
    }

    private func release(_ lease: Lease) {
        guard Self.resetForReuse(lease.connection, logger: logger) else {
            releaseSlot()
            return  // the connection closes here, outside the lock
        }
        let (waiter, dropped) = state.withLock { state -> (Waiter?, Lease?) in
            if state.closed {
                state.openCount -= 1
                state.inUse -= 1
                return (nil, lease)
            }
            if !state.waiters.isEmpty {
                let waiter = state.waiters.removeFirst()
                state.grants[waiter.id] = .connection(lease)
                return (waiter, nil)
            }
            state.idle.append(lease)
            state.inUse -= 1
            return (nil, nil)
        }
        waiter?.semaphore.signal()
        _ = dropped
    }

    /// Brings a returned connection back to an idle session, or says it must be discarded.
    private static func resetForReuse(_ connection: PostgresConnection, logger: Logger) -> Bool {
        guard !connection.isBroken else { return false }
        switch connection.transactionStatus {
        case .idle:
            return true
        case .inTransaction, .failedTransaction:
            do {
                try connection.execute(unsafeSQL: "ROLLBACK")
                return connection.transactionStatus == .idle
            } catch {
                logger.info("discarding a postgres connection that could not roll back", metadata: ["error": "\(error)"])
                return false
            }
        case .active, .unknown:
            return false
        }
    }

    private static func runTransaction<T>(
        on connection: PostgresConnection,
        begin: String,
        _ body: (PostgresConnection) throws -> T
    ) throws -> T {
        try connection.execute(unsafeSQL: begin)
        let value: T
        do {
            value = try body(connection)
        } catch {
            rollBack(connection)
            throw error
        }
        if connection.transactionStatus == .failedTransaction {
            rollBack(connection)
            throw PostgresError(
                kind: .server,
                sqlState: "25P02",
                message: "a statement failed inside the transaction and the error was not rethrown; the transaction was rolled back"
            )
        }
        try connection.execute(unsafeSQL: "COMMIT")
        return value
    }

    /// Best effort: a broken connection has lost its transaction anyway, and the pool discards it.
    private static func rollBack(_ connection: PostgresConnection) {
        guard !connection.isBroken, connection.transactionStatus != .idle else { return }
        try? connection.execute(unsafeSQL: "ROLLBACK")
    }

    private static let closedError = PostgresError(kind: .poolClosed, message: "the connection pool is closed")
}
