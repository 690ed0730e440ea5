import FirebaseAdmin
import Foundation
@testable import Locify
@testable import LocifyJobs
import Logging
import Postgres
import Testing
import TestSupport
import TestSupportDatabase

/// Issue 13, item 7: one poison value never stalls clean-up. Object names that cannot exist are
/// skipped (counted, logged) instead of failing a deletion or holding a job; Google's permanent
/// 4xx ends a job as `failed_permanent`; retries run out; the Auth account job is never held
/// back by a Storage job that failed for good.
@Suite("Clean-up: poison values and permanent failures")
struct CleanupPoisonTests {
    static let longName = String(repeating: "n", count: 1_100)

    static func firebaseURL(_ encodedPath: String) -> String {
        "https://firebasestorage.googleapis.com/v0/b/\(TestConstants.bucket)/o/\(encodedPath)?alt=media&token=abc"
    }

    static func jobs(_ db: LocifyTestDatabase) throws -> [(kind: String, target: String, state: String, attempts: Int32)] {
        try db.pool.withConnection { connection in
            try connection.query("SELECT kind, target, state, attempts FROM cleanup_jobs ORDER BY id").map { row in
                (try row.decode(0), try row.decode(1), try row.decode(2), try row.decode(3))
            }
        }
    }

    static func worker(
        _ db: LocifyTestDatabase, _ executor: CleanupScriptedExecutor, maxAttempts: Int = 50, baseBackoff: Double = 0,
        maxBackoff: Double = 3600,
        skips: CleanupSkips? = nil
    ) -> (CleanupWorker, ConnectionPool) {
        var settings = CleanupWorker.Settings()
        settings.pollInterval = .milliseconds(20)
        settings.baseBackoff = baseBackoff
        settings.maxBackoff = maxBackoff
        settings.maxAttempts = maxAttempts
        let pool = ConnectionPool(configuration: db.database.configuration, size: 1, logger: TestDatabase.logger)
        return (CleanupWorker(pool: pool, executor: executor, settings: settings, logger: TestDatabase.logger, skips: skips), pool)
    }

    static func enqueue(_ db: LocifyTestDatabase, userID: String, _ jobs: [(String, String)]) throws {
        try db.pool.withConnection { connection in
            for (kind, target) in jobs {
                try connection.query("INSERT INTO cleanup_jobs (user_id, kind, target) VALUES (\(userID), \(kind), \(target))")
            }
        }
    }

    @Test("a cascade over stored URLs decoding to a NUL or to over 1,024 bytes succeeds; they are skipped, logged and counted")
    func cascadeSkipsPoison() throws {
        let capture = LogCapture()
        let db = try LocifyTestDatabase.create()
        defer { db.drop() }
        let skips = CleanupSkips(logger: capture.logger())
        let services = LocifyServices(
            pool: db.pool, settings: LocifySettings(storageBucket: TestConstants.bucket), cleanupSkips: skips)
        let caller = TestConstants.newCaller()
        let uid = caller.userID
        let category = UUID()
        _ = try services.categories.create(caller, CategoryDraft(id: category, name: "Poisoned"))
        // Rows stored before the write-time rule: the location is written with a valid URL, then
        // its stored URLs are set directly (a draft refuses the poison ones), as before migration
        // 0007 (images_outside_folder NULL).
        let location = UUID()
        _ = try services.locations.create(caller, LocationDraft(
            id: location, categoryID: category, name: "Poison", latitude: 1, longitude: 1,
            imageURLs: [Self.firebaseURL("locations%2F\(uid)%2Fshared%2Fgood.jpg")]))
        let stored = [
            Self.firebaseURL("locations%2F\(uid)%2Fa%00b"),
            Self.firebaseURL("locations%2F\(uid)%2F\(Self.longName)"),
            Self.firebaseURL("locations%2F\(uid)%2Fshared%2Fgood.jpg"),
        ]
        try db.pool.withConnection { connection in
            try connection.query(
                "UPDATE locations SET image_urls = \(stored), images_outside_folder = NULL WHERE user_id = \(uid) AND id = \(location)")
        }

        _ = try services.categories.delete(caller, id: category, updatedAt: nil, reassignTo: nil)
        CascadeWorker(pool: db.pool, cascades: services.cascades, logger: TestDatabase.logger).settleNow()  // the batches queue the locations' clean-up (PendingCascades)

        let targets = try Self.jobs(db).map(\.target)
        #expect(targets.contains("locations/\(uid)/shared/good.jpg"))
        #expect(!targets.contains { $0.utf8.count > 1024 || $0.contains("\u{0}") })
        let counts = Dictionary(uniqueKeysWithValues: skips.snapshot.map { ($0.reason, $0.count) })
        #expect(counts == ["control_character": 1, "name_too_long": 1, "empty": 0])
        let warnings = capture.all.filter { $0.level >= .warning }
        #expect(warnings.contains { $0.message.contains("cannot exist") && $0.metadata["reason"] == "control_character" })
        #expect(warnings.contains { $0.message.contains("cannot exist") && $0.metadata["reason"] == "name_too_long" })
    }

    @Test("a queued job whose object name cannot exist is skipped, counted and removed without calling Google")
    func queuedPoisonSkipped() throws {
        let db = try LocifyTestDatabase.create()
        defer { db.drop() }
        let uid = "poison-queued"
        try Self.enqueue(db, userID: uid, [
            ("storage_object", "locations/\(uid)/\(Self.longName)"), ("storage_object", "locations/\(uid)/fine.jpg"),
            ("auth_account", uid),
        ])
        let executor = CleanupScriptedExecutor()
        let skips = CleanupSkips(logger: TestDatabase.logger)
        let (worker, pool) = Self.worker(db, executor, skips: skips)
        defer { pool.close() }
        worker.runDueJobs()
        #expect(executor.calls.map(\.target) == ["locations/\(uid)/fine.jpg", uid])
        #expect(try Self.jobs(db).isEmpty)
        #expect(skips.snapshot.first { $0.reason == "name_too_long" }?.count == 1)
    }

    @Test("Google's permanent 400 ends the job as failed_permanent (never retried); the Auth account job then runs")
    func permanentFailure() throws {
        let db = try LocifyTestDatabase.create()
        defer { db.drop() }
        let uid = "permanent-400"
        try Self.enqueue(db, userID: uid, [("storage_prefix", "locations/\(uid)/"), ("auth_account", uid)])
        let executor = CleanupScriptedExecutor()
        executor.failNext(.storagePrefix, with: GoogleAPIError(status: 400, message: "Invalid object name", retryable: false))
        let (worker, pool) = Self.worker(db, executor)
        defer { pool.close() }
        worker.runDueJobs()
        worker.runDueJobs()
        #expect(executor.calls.map(\.target) == ["locations/\(uid)/", uid])
        let left = try Self.jobs(db)
        #expect(left.count == 1)
        #expect(left.first?.target == "locations/\(uid)/" && left.first?.state == "failed_permanent" && left.first?.attempts == 1)
        #expect(worker.statistics.failedPermanent == 1 && worker.statistics.pending == 0 && worker.statistics.failed == 0)
        // Due or not, it is never claimed again.
        _ = try db.pool.withConnection { connection in try connection.query("UPDATE cleanup_jobs SET run_after = now()") }
        worker.runDueJobs()
        #expect(executor.callCount("locations/\(uid)/") == 1)
    }

    @Test("401, 403 and 5xx are not permanent; a job failing after maxAttempts ends as failed_permanent")
    func retriesRunOut() throws {
        #expect(!GoogleAPIError(status: 401, message: "", retryable: false).isPermanent)
        #expect(!GoogleAPIError(status: 403, message: "", retryable: false).isPermanent)
        #expect(!GoogleAPIError(status: 429, message: "", retryable: true).isPermanent)
        #expect(!GoogleAPIError(status: 503, message: "", retryable: true).isPermanent)
        #expect(!GoogleAPIError(status: nil, message: "", retryable: true).isPermanent)
        #expect(GoogleAPIError(status: 400, message: "", retryable: false).isPermanent)
        #expect(GoogleAPIError(status: 410, message: "", retryable: false).isPermanent)
        #expect(!GoogleAPIError(status: 400, message: "token endpoint: invalid_grant", retryable: true).isPermanent)

        let db = try LocifyTestDatabase.create()
        defer { db.drop() }
        let uid = "retries-run-out"
        try Self.enqueue(db, userID: uid, [("storage_prefix", "locations/\(uid)/"), ("auth_account", uid)])
        let executor = CleanupScriptedExecutor()
        executor.failNext(.storagePrefix, count: 100, with: GoogleAPIError(status: 503, message: "backend error", retryable: true))
        let (worker, pool) = Self.worker(db, executor, maxAttempts: 3, maxBackoff: 0)
        defer { pool.close() }
        for _ in 0..<5 { worker.runDueJobs() }
        #expect(executor.callCount("locations/\(uid)/") == 3)
        #expect(executor.callCount(uid) == 1)
        let left = try Self.jobs(db)
        #expect(left.count == 1 && left.first?.state == "failed_permanent" && left.first?.attempts == 3)
    }

    @Test("a job of a kind this server does not know fails with CleanupJobError, permanent, not as a Google error")
    func unknownKindIsDomainFailure() {
        let executor = CleanupScriptedExecutor()
        var thrown: (any Error)?
        do { try CleanupWorker.run(kind: "frobnicate", target: "x", on: executor) } catch { thrown = error }
        #expect(thrown as? CleanupJobError == .unknownKind("frobnicate"))
        #expect(!(thrown is GoogleAPIError))
        #expect(thrown.map(CleanupWorker.isPermanent) == true)
        #expect(thrown.map(CleanupWorker.storableErrorText) == "unknown job kind frobnicate")
        #expect(executor.callCount("x") == 0)
    }

    @Test("a huge Retry-After from Google (999,999,999 s) waits at most the backoff cap, not 31 years")
    func hugeRetryAfterCapped() throws {
        let db = try LocifyTestDatabase.create()
        defer { db.drop() }
        let (worker, pool) = Self.worker(db, CleanupScriptedExecutor(), baseBackoff: 2, maxBackoff: 3600)
        defer { pool.close() }
        let throttled = GoogleAPIError(status: 429, message: "rate", retryable: true, retryAfter: 999_999_999)
        #expect(worker.backoff(afterAttempts: 1, error: throttled) == 3600)
        let modest = GoogleAPIError(status: 429, message: "rate", retryable: true, retryAfter: 120)
        #expect(worker.backoff(afterAttempts: 1, error: modest) >= 120)
    }

    @Test("an error message holding a NUL (Google echoing a hostile name) is stored escaped; the job is not stuck")
    func errorWithNul() throws {
        let db = try LocifyTestDatabase.create()
        defer { db.drop() }
        let uid = "nul-error"
        try Self.enqueue(db, userID: uid, [("storage_object", "locations/\(uid)/x.jpg")])
        let executor = CleanupScriptedExecutor()
        executor.failNext(.storageObject, with: GoogleAPIError(status: 503, message: "No such object: a\u{0}b", retryable: true))
        let (worker, pool) = Self.worker(db, executor, baseBackoff: 60)
        defer { pool.close() }
        worker.runDueJobs()
        let row = try db.pool.withConnection { connection in
            try connection.query("SELECT attempts, last_error FROM cleanup_jobs").first
        }
        #expect(try row?.decode(0, as: Int32.self) == 1)
        let lastError: String? = try row?.decode(1)
        #expect(lastError?.contains("a\\u{0}b") == true, "\(String(describing: lastError))")
        // Backed off: not run again at once.
        worker.runDueJobs()
        #expect(executor.callCount("locations/\(uid)/x.jpg") == 1)
    }
}
