import FirebaseAdmin
import Foundation
@testable import Locify
@testable import LocifyJobs
import Postgres
import Synchronization
import Testing
import TestSupport
import TestSupportDatabase

/// The durable clean-up worker against PostgreSQL with a scripted executor: every job runs until
/// it succeeds, with backoff; the Auth account goes after the user's Storage; claimed jobs are
/// never run twice at once; a job whose worker died is run again; no executor, no work.
@Suite("Clean-up: the job worker")
struct CleanupWorkerTests {
    static let retryable = GoogleAPIError(status: 503, message: "backend error", retryable: true)

    static func settings(baseBackoff: Double = 0, maxBackoff: Double = 0) -> CleanupWorker.Settings {
        var settings = CleanupWorker.Settings()
        settings.pollInterval = .milliseconds(20)
        settings.baseBackoff = baseBackoff
        settings.maxBackoff = maxBackoff
        return settings
    }

    static func worker(
        _ db: LocifyTestDatabase, _ executor: CleanupScriptedExecutor?, settings: CleanupWorker.Settings = settings()
    ) -> (CleanupWorker, ConnectionPool) {
        let pool = ConnectionPool(configuration: db.database.configuration, size: 1, logger: TestDatabase.logger)
        return (CleanupWorker(pool: pool, executor: executor, settings: settings, logger: TestDatabase.logger), pool)
    }

    /// Inserts jobs directly (as a deletion's transaction would).
    static func enqueue(_ db: LocifyTestDatabase, userID: String, _ jobs: [(String, String)]) throws {
        try db.pool.withConnection { connection in
            for (kind, target) in jobs {
                try connection.query("INSERT INTO cleanup_jobs (user_id, kind, target) VALUES (\(userID), \(kind), \(target))")
            }
        }
    }

    static func accountJobs(_ uid: String) -> [(String, String)] {
        [("storage_prefix", "locations/\(uid)/"), ("storage_prefix", "categories/\(uid)/"), ("auth_account", uid)]
    }

    static func remainingJobs(_ db: LocifyTestDatabase) throws -> Int64 {
        try db.pool.withConnection { connection in
            try connection.query("SELECT count(*) FROM cleanup_jobs").first?.decode(0) ?? -1
        }
    }

    @Test("each due job runs once and is removed; the Auth account goes after the user's Storage folders")
    func runsEachJobOnce() throws {
        let db = try LocifyTestDatabase.create()
        defer { db.drop() }
        let executor = CleanupScriptedExecutor()
        let (worker, pool) = Self.worker(db, executor)
        defer { pool.close() }
        // The Auth job is queued first, yet must wait for the Storage jobs of the same user.
        try Self.enqueue(db, userID: "u1", [("auth_account", "u1"), ("storage_prefix", "locations/u1/"), ("storage_prefix", "categories/u1/")])
        try Self.enqueue(db, userID: "u2", [("storage_object", "locations/u2/l/a.jpg")])
        #expect(worker.runDueJobs() == 4)
        let calls = executor.calls
        #expect(calls.count == 4)
        let authIndex = try #require(calls.firstIndex { $0.kind == .authAccount })
        let storageIndices = calls.indices.filter { calls[$0].target.contains("/u1/") }
        #expect(storageIndices.count == 2 && storageIndices.allSatisfy { $0 < authIndex })
        #expect(try Self.remainingJobs(db) == 0)
        #expect(worker.runDueJobs() == 0)
        #expect(executor.calls.count == 4)
        #expect(worker.statistics == CleanupWorker.QueueStatistics(pending: 0, failed: 0))
    }

    @Test("a failing job is retried with backoff until it succeeds; the Auth job waits for the Storage job meanwhile")
    func retriesUntilSuccess() throws {
        let db = try LocifyTestDatabase.create()
        defer { db.drop() }
        let executor = CleanupScriptedExecutor()
        let (worker, pool) = Self.worker(db, executor)
        defer { pool.close() }
        try Self.enqueue(db, userID: "u1", Self.accountJobs("u1"))
        executor.failNext(.storagePrefix, count: 3, with: Self.retryable)
        // With zero backoff a failed job is due again at once.
        var passes = 0
        while try Self.remainingJobs(db) > 0, passes < 20 {
            worker.runDueJobs()
            passes += 1
        }
        #expect(try Self.remainingJobs(db) == 0)
        let calls = executor.calls
        #expect(calls.filter { $0.kind == .storagePrefix }.count == 5)
        #expect(calls.filter { $0.kind == .authAccount }.count == 1)
        #expect(calls.last?.kind == .authAccount)
    }

    @Test("a failure is recorded (attempts, last error, later run_after) and counted as failed until it succeeds")
    func failureIsRecorded() throws {
        let db = try LocifyTestDatabase.create()
        defer { db.drop() }
        let executor = CleanupScriptedExecutor()
        let (worker, pool) = Self.worker(db, executor, settings: Self.settings(baseBackoff: 30, maxBackoff: 60))
        defer { pool.close() }
        try Self.enqueue(db, userID: "u1", [("storage_prefix", "locations/u1/")])
        try Self.enqueue(db, userID: "u2", [("storage_prefix", "locations/u2/")])
        executor.failNext(.storagePrefix, with: Self.retryable)
        #expect(worker.runDueJobs() == 2)
        #expect(worker.statistics == CleanupWorker.QueueStatistics(pending: 0, failed: 1))
        let row = try db.pool.withConnection { connection in
            try connection.query(
                """
                SELECT attempts, last_error, extract(epoch FROM run_after - now())::float8 FROM cleanup_jobs
                """
            ).first
        }
        let failed = try #require(row)
        #expect(try failed.decode(0) as Int32 == 1)
        #expect(try (failed.decode(1) as String).contains("backend error"))
        let delay: Double = try failed.decode(2)
        #expect(delay > 14 && delay <= 30, "first retry after base x [0.5, 1]: \(delay)")
        // Not due yet: nothing runs.
        #expect(worker.runDueJobs() == 0)
        #expect(executor.calls.count == 2)
        // Once due it runs again and succeeds.
        _ = try db.pool.withConnection { connection in try connection.query("UPDATE cleanup_jobs SET run_after = now()") }
        #expect(worker.runDueJobs() == 1)
        #expect(worker.statistics == CleanupWorker.QueueStatistics(pending: 0, failed: 0))
    }

    @Test("backoff doubles per attempt with jitter, is capped, honours Retry-After, and waits longest for non-retryable errors")
    func backoff() throws {
        let db = try LocifyTestDatabase.create()
        defer { db.drop() }
        let (worker, pool) = Self.worker(db, nil, settings: Self.settings(baseBackoff: 2, maxBackoff: 3600))
        defer { pool.close() }
        for attempt in 1...8 {
            let nominal = 2 * pow(2, Double(attempt - 1))
            for _ in 0..<20 {
                let delay = worker.backoff(afterAttempts: attempt, error: Self.retryable)
                #expect(delay >= nominal * 0.5 && delay <= nominal, "attempt \(attempt): \(delay)")
            }
        }
        #expect(worker.backoff(afterAttempts: 40, error: Self.retryable) <= 3600)
        #expect(worker.backoff(afterAttempts: 1_000_000, error: Self.retryable) <= 3600)
        let throttled = GoogleAPIError(status: 429, message: "rate", retryable: true, retryAfter: 120)
        #expect(worker.backoff(afterAttempts: 1, error: throttled) >= 120)
        let forbidden = GoogleAPIError(status: 403, message: "PERMISSION_DENIED", retryable: false)
        #expect(worker.backoff(afterAttempts: 1, error: forbidden) == 3600)
    }

    @Test("without an executor (no credentials) jobs stay queued and are counted as pending")
    func noExecutor() throws {
        let db = try LocifyTestDatabase.create()
        defer { db.drop() }
        let (worker, pool) = Self.worker(db, nil)
        defer { pool.close() }
        try Self.enqueue(db, userID: "u1", Self.accountJobs("u1"))
        #expect(worker.runDueJobs() == 0)
        #expect(try Self.remainingJobs(db) == 3)
        #expect(worker.statistics == CleanupWorker.QueueStatistics(pending: 3, failed: 0))
    }

    @Test("a job claimed by a server that then died is skipped while claimed and run once its session is gone")
    func killedClaimant() throws {
        let db = try LocifyTestDatabase.create()
        defer { db.drop() }
        let executor = CleanupScriptedExecutor()
        let (worker, pool) = Self.worker(db, executor)
        defer { pool.close() }
        try Self.enqueue(db, userID: "u1", [("storage_prefix", "locations/u1/")])

        // Another "server" claims the job the way the worker does and then stops answering.
        let claimant = try PostgresConnection.connect(db.database.configuration, logger: TestDatabase.logger)
        try claimant.execute(unsafeSQL: "BEGIN")
        let claimed = try claimant.query("SELECT id FROM cleanup_jobs FOR UPDATE SKIP LOCKED")
        #expect(claimed.count == 1)
        #expect(worker.runDueJobs() == 0)
        #expect(executor.calls.isEmpty)

        // PostgreSQL notices the dead session (here: terminated) and releases its lock.
        let pid = claimant.backendProcessID
        try db.pool.withConnection { connection in
            let terminated: Bool = try connection.query("SELECT pg_terminate_backend(\(pid), 10000)").first?.decode(0) ?? false
            #expect(terminated)
        }
        #expect(worker.runDueJobs() == 1)
        #expect(executor.calls == [.init(kind: .storagePrefix, target: "locations/u1/")])
        #expect(try Self.remainingJobs(db) == 0)
    }

    @Test("a job whose worker lost its database session mid-job is run again and then removed")
    func workerSessionDiesMidJob() throws {
        let db = try LocifyTestDatabase.create()
        defer { db.drop() }
        let executor = CleanupScriptedExecutor()
        let (worker, pool) = Self.worker(db, executor)
        defer { pool.close() }
        try Self.enqueue(db, userID: "u1", [("storage_prefix", "locations/u1/")])
        let adminPool = db.pool
        let killed = Mutex(false)
        executor.onCall { _ in
            guard !killed.withLock({ $0 }) else { return }
            killed.withLock { $0 = true }
            // The worker holds its claim in an open transaction; end that session under it.
            _ = try? adminPool.withConnection { connection in
                _ = try connection.query(
                    """
                    SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity
                    WHERE datname = current_database() AND state = 'idle in transaction' AND pid <> pg_backend_pid()
                    """)
            }
        }
        worker.runDueJobs()
        #expect(killed.withLock { $0 })
        #expect(try Self.remainingJobs(db) == 1, "the job's removal died with the session")
        #expect(eventually(timeout: .seconds(30)) {
            worker.runDueJobs()
            return (try? Self.remainingJobs(db)) == 0
        })
        #expect(executor.callCount("locations/u1/") == 2)
    }

    @Test("two workers on one database never run one job at once, and every job runs exactly once")
    func twoWorkers() throws {
        let db = try LocifyTestDatabase.create()
        defer { db.drop() }
        let executor = CleanupScriptedExecutor()
        executor.delay = 0.01
        let (first, firstPool) = Self.worker(db, executor)
        let (second, secondPool) = Self.worker(db, executor)
        defer {
            firstPool.close()
            secondPool.close()
        }
        var expected: [String] = []
        for index in 0..<15 {
            let uid = "user-\(index)"
            try Self.enqueue(db, userID: uid, Self.accountJobs(uid))
            expected += Self.accountJobs(uid).map(\.1)
        }
        first.start()
        second.start()
        defer {
            first.stop()
            second.stop()
        }
        #expect(eventually { (try? Self.remainingJobs(db)) == 0 })
        #expect(executor.overlaps.isEmpty, "jobs run twice at once: \(executor.overlaps)")
        #expect(executor.calls.map(\.target).sorted() == expected.sorted())
        let calls = executor.calls
        for index in 0..<15 {
            let uid = "user-\(index)"
            let auth = try #require(calls.firstIndex { $0.kind == .authAccount && $0.target == uid })
            #expect(calls.indices.filter { calls[$0].target.contains("/\(uid)/") }.allSatisfy { $0 < auth })
        }
    }

    @Test("stopping the worker returns after the job in progress, not after the whole queue")
    func stopsAfterCurrentJob() throws {
        let db = try LocifyTestDatabase.create()
        defer { db.drop() }
        let executor = CleanupScriptedExecutor()
        executor.delay = 0.05
        let (worker, pool) = Self.worker(db, executor)
        defer { pool.close() }
        try Self.enqueue(db, userID: "u1", (0..<40).map { ("storage_object", "locations/u1/l/\($0).jpg") })
        worker.start()
        #expect(eventually { !executor.calls.isEmpty })
        let callsAtStop = executor.calls.count
        worker.stop()
        let callsAfterStop = executor.calls.count
        #expect(callsAfterStop <= callsAtStop + 1, "the worker ran \(callsAfterStop - callsAtStop) more jobs after stop")
        #expect(try Self.remainingJobs(db) >= Int64(40 - callsAfterStop))
        // Another worker picks up where it stopped.
        let (next, nextPool) = Self.worker(db, executor)
        defer { nextPool.close() }
        executor.delay = 0
        next.runDueJobs()
        #expect(try Self.remainingJobs(db) == 0)
    }
}
