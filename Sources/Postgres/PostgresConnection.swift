internal import CLibPQ
import FoundationEssentials
import Glibc
import Logging
import Primitives

/// One libpq connection, used by one thread at a time (the pool hands it out); all calls block.
///
/// Every query is parameterized and runs as a prepared statement cached on this connection: the
/// first use of a SQL text prepares it, later uses only execute it. Results come back in binary.
public final class PostgresConnection {
    /// Prepared statements kept per connection before the least recently used one is dropped.
    static let statementCacheCapacity = 256

    private let handle: OpaquePointer
    private let logger: Logger
    private let noticeSink: NoticeSink
    private var statements = PreparedStatementCache(capacity: statementCacheCapacity)
    /// Statements evicted while the transaction was aborted, deallocated at the next chance.
    private var pendingDeallocations: [String] = []

    /// True once the connection failed or was lost; a broken connection is never used again.
    public private(set) var isBroken = false

    private init(handle: OpaquePointer, logger: Logger) {
        self.handle = handle
        self.logger = logger
        self.noticeSink = NoticeSink(logger: logger)
        PQsetNoticeReceiver(handle, receiveNotice, Unmanaged.passUnretained(noticeSink).toOpaque())
    }

    deinit {
        PQfinish(handle)
    }

    /// Opens a connection (failing with `.connectionFailed` within `connectTimeout`), then sets the
    /// session time zone to UTC and the statement timeout.
    public static func connect(_ configuration: PostgresConfiguration, logger: Logger) throws(PostgresError) -> PostgresConnection {
        let connection = try startConnecting(configuration, logger: logger)
        try connection.waitUntilConnected(timeout: configuration.connectTimeout)
        do {
            var setup = "SET TIME ZONE 'UTC'"
            if let timeout = configuration.statementTimeout {
                setup += "; SET statement_timeout = \(timeout.milliseconds)"
            }
            try connection.execute(unsafeSQL: setup)
            for (name, value) in configuration.sessionSettings.sorted(by: { $0.key < $1.key }) {
                try connection.query("SELECT set_config(\(name), \(value), false)")
            }
        } catch {
            throw PostgresError(kind: .connectionFailed, sqlState: error.sqlState, message: "session setup failed: \(error.message)")
        }
        logger.debug("postgres connection opened", metadata: ["backend_pid": "\(connection.backendProcessID)"])
        return connection
    }

    /// The server process serving this connection (as in `pg_stat_activity.pid`).
    public var backendProcessID: Int32 {
        PQbackendPID(handle)
    }

    /// Runs one parameterized statement and returns its rows (binary format).
    @discardableResult
    public func query(_ query: PostgresQuery) throws(PostgresError) -> PostgresRows {
        try ensureUsable()
        let key = PreparedStatementCache.Key(sql: query.sql, parameterTypes: query.binds.map(\.dataType.rawValue))
        var mayRetry = true
        while true {
            let name: String
            if let cached = statements.name(for: key) {
                name = cached
            } else {
                name = try prepare(key)
            }
            do throws(PostgresError) {
                return PostgresRows(result: try executePrepared(name, binds: query.binds))
            } catch {
                guard Self.invalidatesPreparedStatement(error) else { throw error }
                // The server lost or outdated the statement (DISCARD ALL, schema change): prepare it
                // again. Only outside a transaction block can the statement simply be run again.
                statements.remove(key)
                guard mayRetry, transactionStatus == .idle else { throw error }
                mayRetry = false
            }
        }
    }

    /// Runs SQL text with the simple query protocol: several statements separated by `;`, no binds
    /// (migrations, `SET`, `BEGIN`, `COMMIT`). Never put values into this text.
    public func execute(unsafeSQL sql: String) throws(PostgresError) {
        try ensureUsable()
        _ = try check(PQexec(handle, sql))
    }

    // MARK: - Pool support

    /// Where the session stands with respect to transactions.
    enum TransactionStatus {
        case idle, active, inTransaction, failedTransaction, unknown
    }

    var transactionStatus: TransactionStatus {
        switch PQtransactionStatus(handle) {
        case PQTRANS_IDLE: return .idle
        case PQTRANS_ACTIVE: return .active
        case PQTRANS_INTRANS: return .inTransaction
        case PQTRANS_INERROR: return .failedTransaction
        default: return .unknown
        }
    }

    /// Checks without blocking that an idle connection is still open: reads whatever the server
    /// sent meanwhile (a termination notice, EOF after a restart) and reports false when it is gone.
    func checkAliveWhileIdle() -> Bool {
        guard !isBroken else { return false }
        guard PQstatus(handle) == CONNECTION_OK else {
            isBroken = true
            return false
        }
        let socket = PQsocket(handle)
        guard socket >= 0 else {
            isBroken = true
            return false
        }
        for _ in 0..<4 {
            var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 0)
            if ready == 0 { return true }
            if ready < 0 {
                if errno == EINTR { continue }
                isBroken = true
                return false
            }
            if PQconsumeInput(handle) == 0 || PQstatus(handle) == CONNECTION_BAD {
                isBroken = true
                return false
            }
            // Parse what arrived: an error while idle reaches the notice receiver, and a FATAL one
            // means the server is closing this session (terminated backend, shutdown) even if the
            // socket is not closed yet.
            _ = PQisBusy(handle)
            while let notification = PQnotifies(handle) {
                PQfreemem(notification)
            }
            if noticeSink.receivedFatalError {
                isBroken = true
                return false
            }
        }
        return PQstatus(handle) == CONNECTION_OK
    }

    // MARK: - LISTEN support (PostgresListener)

    /// The connection's socket, to wait on with `poll` (-1 when there is none).
    var socketDescriptor: Int32 { PQsocket(handle) }

    /// Reads, without blocking, what the server sent on a connection that listens, and parses it
    /// (notifications, the answer to a probe). False when the connection is lost: end of stream,
    /// or a FATAL message such as the one a terminated backend sends.
    func readInput() -> Bool {
        guard !isBroken else { return false }
        if PQconsumeInput(handle) == 0 || PQstatus(handle) == CONNECTION_BAD {
            isBroken = true
            return false
        }
        _ = PQisBusy(handle)
        if noticeSink.receivedFatalError {
            isBroken = true
            return false
        }
        return true
    }

    /// The next notification `readInput` received, nil when there is none.
    func nextNotification() -> (channel: String, payload: String)? {
        guard let notification = PQnotifies(handle) else { return nil }
        defer { PQfreemem(notification) }
        return (String(cString: notification.pointee.relname), String(cString: notification.pointee.extra))
    }

    /// Sends `SELECT 1` without waiting for the answer (`collectProbeAnswer` reads it): proof that
    /// the server still answers on a connection that otherwise only listens. False when it could
    /// not be sent.
    func sendProbe() -> Bool {
        guard !isBroken, PQsendQuery(handle, "SELECT 1") == 1 else {
            isBroken = true
            return false
        }
        return PQflush(handle) == 0
    }

    /// After `readInput`: true once the whole answer to the probe has arrived, false while it has
    /// not; throws when the probe failed (the connection is then broken).
    func collectProbeAnswer() throws(PostgresError) -> Bool {
        while PQisBusy(handle) == 0 {
            guard let result = PQgetResult(handle) else { return true }
            let status = PQresultStatus(result)
            PQclear(result)
            if status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK {
                isBroken = true
                throw PostgresError(kind: .connectionLost, message: "the probe of a listening connection failed")
            }
        }
        return false
    }

    // MARK: - Statements with a client-side deadline (PostgresListener, PostgresNotifier)

    /// Runs `query` unprepared and waits at most `timeout` (on `clock`) for its whole answer: on a
    /// connection whose peer went silent (a half-open connection after a failover, whose packets
    /// vanish or are acknowledged by something that never answers), the server's
    /// `statement_timeout` never fires and libpq would wait for ever. After the deadline the
    /// connection is broken (`connectionLost`) and must be replaced.
    @discardableResult
    func query(_ query: PostgresQuery, answerWithin timeout: Duration, clock: MonotonicClock) throws(PostgresError) -> PostgresRows {
        try ensureUsable()
        let deadline = clock.now() + timeout
        let types = query.binds.map(\.dataType.rawValue)
        let sent = try types.withUnsafeBufferPointer { types throws(PostgresError) in
            try Self.withBindValues(query.binds) { count, values, lengths, formats in
                PQsendQueryParams(handle, query.sql, count, types.baseAddress, values, lengths, formats, 1)
            }
        }
        guard sent == 1 else { throw lostConnection(currentErrorMessage()) }
        var result: PostgresResult?
        var failure: PostgresError?
        while true {
            let flushed = PQflush(handle)
            if flushed < 0 { throw lostConnection(currentErrorMessage()) }
            if flushed == 0 {
                while PQisBusy(handle) == 0 {
                    guard let next = PQgetResult(handle) else {
                        if let failure { throw failure }
                        guard let result else { throw lostConnection("no result") }
                        return PostgresRows(result: result)
                    }
                    do throws(PostgresError) {
                        let checked = try check(next)
                        if result == nil { result = checked }
                    } catch {
                        if failure == nil { failure = error }
                        if isBroken { throw error }
                    }
                }
            }
            let remaining = deadline - clock.now()
            guard remaining > .zero else {
                throw lostConnection("no answer from the server within \(timeout.milliseconds) ms")
            }
            var descriptor = pollfd(
                fd: PQsocket(handle), events: Int16(flushed == 1 ? POLLIN | POLLOUT : POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32(clamping: remaining.milliseconds + 1))
            if ready < 0 && errno != EINTR { throw lostConnection("poll failed: errno \(errno)") }
            if ready > 0 && descriptor.revents & Int16(POLLIN | POLLERR | POLLHUP) != 0 {
                if PQconsumeInput(handle) == 0 { throw lostConnection(currentErrorMessage()) }
            }
        }
    }

    /// Marks the connection broken and describes why.
    private func lostConnection(_ message: String) -> PostgresError {
        isBroken = true
        return PostgresError(kind: .connectionLost, message: message)
    }

    /// The number of statements currently prepared on this connection (for tests and metrics).
    var preparedStatementCount: Int { statements.count }

    // MARK: - Connecting

    private static func startConnecting(_ configuration: PostgresConfiguration, logger: Logger) throws(PostgresError) -> PostgresConnection {
        let parameters = configuration.connectParameters
        var keywords: [UnsafeMutablePointer<CChar>?] = []
        var values: [UnsafeMutablePointer<CChar>?] = []
        defer {
            keywords.forEach { free($0) }
            values.forEach { free($0) }
        }
        for parameter in parameters {
            keywords.append(strdup(parameter.keyword))
            values.append(strdup(parameter.value))
        }
        guard !keywords.contains(where: { $0 == nil }), !values.contains(where: { $0 == nil }) else {
            throw PostgresError(kind: .connectionFailed, message: "out of memory")
        }
        var keywordPointers = keywords.map { $0.map { UnsafePointer($0) } }
        var valuePointers = values.map { $0.map { UnsafePointer($0) } }
        keywordPointers.append(nil)
        valuePointers.append(nil)
        guard let handle = PQconnectStartParams(keywordPointers, valuePointers, 0) else {
            throw PostgresError(kind: .connectionFailed, message: "out of memory")
        }
        return PostgresConnection(handle: handle, logger: logger)
    }

    /// Drives libpq's non-blocking connect with `poll`, so the timeout is honoured to the millisecond.
    private func waitUntilConnected(timeout: Duration) throws(PostgresError) {
        guard PQstatus(handle) != CONNECTION_BAD else {
            throw connectionFailure()
        }
        // Not injected: the configuration is a Hashable value, and this is a real wait on libpq's
        // socket, which a moved clock would not shorten (docs/ARCHITECTURE.md, "Clocks").
        let clock = MonotonicClock.system
        let deadline = clock.now() + timeout
        var pollingStatus = PGRES_POLLING_WRITING
        while true {
            switch pollingStatus {
            case PGRES_POLLING_OK:
                return
            case PGRES_POLLING_READING, PGRES_POLLING_WRITING:
                let socket = PQsocket(handle)
                guard socket >= 0 else { throw connectionFailure() }
                let remaining = deadline - clock.now()
                guard remaining > .zero else {
                    isBroken = true
                    throw PostgresError(kind: .connectionFailed, message: "connecting timed out after \(timeout)")
                }
                let events = pollingStatus == PGRES_POLLING_READING ? POLLIN : POLLOUT
                var descriptor = pollfd(fd: socket, events: Int16(events), revents: 0)
                let ready = poll(&descriptor, 1, Int32(clamping: remaining.milliseconds + 1))
                if ready > 0 {
                    pollingStatus = PQconnectPoll(handle)
                } else if ready < 0, errno != EINTR {
                    isBroken = true
                    throw PostgresError(kind: .connectionFailed, message: "poll failed: errno \(errno)")
                }
            default:  // PGRES_POLLING_FAILED
                throw connectionFailure()
            }
        }
    }

    private func connectionFailure() -> PostgresError {
        isBroken = true
        return PostgresError(kind: .connectionFailed, message: currentErrorMessage())
    }

    // MARK: - Statements

    private func ensureUsable() throws(PostgresError) {
        guard !isBroken else {
            throw PostgresError(kind: .connectionLost, message: "the connection is broken")
        }
    }

    private func prepare(_ key: PreparedStatementCache.Key) throws(PostgresError) -> String {
        deallocatePendingStatements()
        let name = statements.makeName()
        let result = key.parameterTypes.withUnsafeBufferPointer { types in
            PQprepare(handle, name, key.sql, Int32(types.count), types.baseAddress)
        }
        _ = try check(result)
        if let evicted = statements.insert(name, for: key) {
            pendingDeallocations.append(evicted)
            deallocatePendingStatements()
        }
        return name
    }

    /// Drops evicted statements on the server; impossible inside an aborted transaction, so they
    /// wait for the next call then.
    private func deallocatePendingStatements() {
        guard !pendingDeallocations.isEmpty, !isBroken, transactionStatus != .failedTransaction else { return }
        let names = pendingDeallocations
        pendingDeallocations.removeAll()
        for name in names {
            do {
                try execute(unsafeSQL: "DEALLOCATE \(name)")
            } catch {
                logger.debug("could not deallocate a prepared statement", metadata: ["error": "\(error)"])
            }
        }
    }

    private func executePrepared(_ name: String, binds: [PostgresBind]) throws(PostgresError) -> PostgresResult {
        let result = try Self.withBindValues(binds) { count, values, lengths, formats in
            PQexecPrepared(handle, name, count, values, lengths, formats, 1)
        }
        return try check(result)
    }

    /// Calls `body` with `binds` as libpq wants them: the count, the value pointers (nil: NULL),
    /// their lengths and formats (all binary).
    private static func withBindValues<Result>(
        _ binds: [PostgresBind],
        _ body: (Int32, UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>, UnsafePointer<Int32>) -> Result
    ) throws(PostgresError) -> Result {
        let count = binds.count
        var storage: [UInt8] = []
        var offsets: [Int] = []
        var lengths: [Int32] = []
        offsets.reserveCapacity(count)
        lengths.reserveCapacity(count)
        storage.reserveCapacity(binds.reduce(1) { $0 + ($1.bytes?.count ?? 0) })
        for bind in binds {
            if let bytes = bind.bytes {
                guard let length = Int32(exactly: bytes.count) else {
                    throw PostgresError(kind: .server, sqlState: "54000", message: "a bind value exceeds 2 GiB")
                }
                offsets.append(storage.count)
                lengths.append(length)
                storage.append(contentsOf: bytes)
            } else {
                offsets.append(-1)
                lengths.append(0)
            }
        }
        storage.append(0)  // so that the buffer has an address even when every value is empty
        let formats = [Int32](repeating: 1, count: count)
        return storage.withUnsafeBufferPointer { buffer in
            withUnsafeTemporaryAllocation(of: UnsafePointer<CChar>?.self, capacity: max(count, 1)) { values in
                let characters = buffer.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) }
                for index in 0..<count {
                    values[index] = offsets[index] < 0 ? nil : characters.map { $0 + offsets[index] }
                }
                return body(Int32(count), UnsafePointer(values.baseAddress), lengths, formats)
            }
        }
    }

    /// Turns a libpq result into an owned result or a `PostgresError`, marking the connection
    /// broken when libpq reports it lost.
    private func check(_ result: OpaquePointer?) throws(PostgresError) -> PostgresResult {
        guard let result else {
            let lost = PQstatus(handle) == CONNECTION_BAD
            isBroken = true
            throw PostgresError(kind: lost ? .connectionLost : .server, message: currentErrorMessage())
        }
        let owned = PostgresResult(result)
        let status = PQresultStatus(result)
        switch status {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return owned
        case PGRES_COPY_IN, PGRES_COPY_OUT, PGRES_COPY_BOTH:
            isBroken = true
            throw PostgresError(kind: .server, message: "COPY is not supported through this API")
        default:
            var error = PostgresError(serverResult: result)
            if PQstatus(handle) == CONNECTION_BAD {
                isBroken = true
                error.kind = .connectionLost
            } else if status == PGRES_BAD_RESPONSE {
                isBroken = true
            }
            throw error
        }
    }

    private func currentErrorMessage() -> String {
        guard let message = PQerrorMessage(handle) else { return "unknown libpq error" }
        let text = String(cString: message).trimmingTrailingWhitespace()
        return text.isEmpty ? "unknown libpq error" : text
    }

    /// 26000 (the statement is gone) and 0A000 "cached plan must not change result type" (a table
    /// the statement reads changed shape) are cured by preparing the statement again.
    private static func invalidatesPreparedStatement(_ error: PostgresError) -> Bool {
        guard error.kind == .server else { return false }
        if error.sqlState == "26000" { return true }
        return error.sqlState == "0A000" && error.message.contains("cached plan")
    }
}

@available(*, unavailable)
extension PostgresConnection: Sendable {}

extension PostgresError {
    /// Reads the diagnostics of a failed libpq result.
    init(serverResult result: OpaquePointer) {
        func field(_ code: Int32) -> String? {
            guard let value = PQresultErrorField(result, code) else { return nil }
            return String(cString: value)
        }
        var message = field(LOCIFY_PG_DIAG_MESSAGE_PRIMARY)
        if message == nil, let text = PQresultErrorMessage(result) {
            message = String(cString: text).trimmingTrailingWhitespace()
        }
        self.init(
            kind: .server,
            sqlState: field(LOCIFY_PG_DIAG_SQLSTATE),
            message: message ?? "unknown server error",
            detail: field(LOCIFY_PG_DIAG_MESSAGE_DETAIL),
            constraint: field(LOCIFY_PG_DIAG_CONSTRAINT_NAME),
            column: field(LOCIFY_PG_DIAG_COLUMN_NAME),
            table: field(LOCIFY_PG_DIAG_TABLE_NAME)
        )
    }
}

/// Receives the server's notices (e.g. "relation already exists, skipping") instead of libpq's
/// default of printing them to stderr; logs only their severity and SQLSTATE, never their text.
/// A FATAL error arriving while the connection is idle also comes here: it marks the session dead.
private final class NoticeSink {
    let logger: Logger
    /// Set when the server sent a FATAL or PANIC message outside a query.
    var receivedFatalError = false

    init(logger: Logger) {
        self.logger = logger
    }
}

private func receiveNotice(_ context: UnsafeMutableRawPointer?, _ result: OpaquePointer?) {
    guard let context, let result else { return }
    let sink = Unmanaged<NoticeSink>.fromOpaque(context).takeUnretainedValue()
    let severity = PQresultErrorField(result, LOCIFY_PG_DIAG_SEVERITY_NONLOCALIZED).map { String(cString: $0) } ?? "NOTICE"
    let sqlState = PQresultErrorField(result, LOCIFY_PG_DIAG_SQLSTATE).map { String(cString: $0) } ?? ""
    if severity == "FATAL" || severity == "PANIC" {
        sink.receivedFatalError = true
    }
    sink.logger.debug("postgres notice", metadata: ["severity": "\(severity)", "sqlstate": "\(sqlState)"])
}
