import FirebaseAdmin
import FoundationEssentials
import Glibc
import Locify
import LocifyRules
import Logging
import Postgres
import Synchronization

/// Runs the durable clean-up jobs (openapi.yaml) until each succeeds or fails for good.
///
/// A job is claimed with `FOR UPDATE SKIP LOCKED` inside a transaction that stays open while it
/// runs, so several server instances never run one job at once, and a job whose server died is
/// unlocked by PostgreSQL and picked up again at once. Jobs are claimed fairly across users, in
/// the order of their `turn` (`CleanupJobStore.enqueue`): a user's jobs run in the order they
/// were queued, and a newly queued user's first job comes right after the job in progress,
/// however long another user's backlog. Failures are retried with exponential
/// backoff and jitter (longer when Google sends `Retry-After`). A job Google refuses for good (a
/// permanent 4xx), or whose retries run out, ends as `failed_permanent`: kept for an operator,
/// never retried, and no longer holding anything back. A Storage job whose object name cannot
/// exist (stored before the write-time rule) is skipped and counted. The Auth account of a
/// deleted user is removed only after all of that user's Storage jobs are done or failed for good.
public final class CleanupWorker: Sendable {
    /// Timing of the worker.
    public struct Settings: Sendable {
        /// How often due jobs are looked for. Default 5 s.
        public var pollInterval: Duration = .seconds(5)
        /// Delay after the first failure, seconds; doubled per attempt. Default 2.
        public var baseBackoff: Double = 2
        /// Longest delay between attempts, seconds; also used after a non-retryable error. Default 3600.
        public var maxBackoff: Double = 3600
        /// Attempts after which a job still failing ends as `failed_permanent` (about 30 hours
        /// at the default backoff). Default 50.
        public var maxAttempts: Int = 50

        /// The default timing: poll every 5 s, back off from 2 s doubling up to 3600 s, give up after 50 attempts.
        public init() {}
    }

    /// Queue depth for `/metrics`.
    public struct QueueStatistics: Sendable, Equatable {
        /// Jobs waiting to run that have not failed yet.
        public var pending: Int64
        /// Jobs whose last attempt failed (they will be retried).
        public var failed: Int64
        /// Jobs that failed for good (permanent 4xx or retries exhausted); never retried.
        public var failedPermanent: Int64 = 0
    }

    private let pool: ConnectionPool
    private let executor: (any CleanupExecutor)?
    private let settings: Settings
    private let logger: Logger
    private let skips: CleanupSkips
    private let cachedStatistics = Mutex(QueueStatistics(pending: 0, failed: 0))
    private let task = Mutex<PeriodicTask?>(nil)
    /// Set by `stop`: `runDueJobs` claims no further job, so stopping waits for one job at most.
    private let stopRequested = Atomic<Bool>(false)

    /// - Parameters:
    ///   - pool: a pool of its own (one connection is enough), since a job holds its
    ///     connection while Google answers.
    ///   - executor: nil when no credentials are configured: jobs then stay queued.
    ///   - skips: where skipped objects are counted (shared with the services for `/metrics`).
    public init(
        pool: ConnectionPool, executor: (any CleanupExecutor)?, settings: Settings = Settings(), logger: Logger,
        skips: CleanupSkips? = nil
    ) {
        self.pool = pool
        self.executor = executor
        self.settings = settings
        self.logger = logger
        self.skips = skips ?? CleanupSkips(logger: logger)
    }

    /// The queue depth as of the last poll.
    public var statistics: QueueStatistics { cachedStatistics.withLock { $0 } }

    /// Starts polling on a thread of its own. The task holds the worker weakly: the worker holds
    /// the task, and a strong reference back was a cycle that kept every stopped worker (its pool
    /// and Google clients) alive (LeakSanitizer found it).
    public func start() {
        let task = PeriodicTask(name: "locify.cleanup-worker", interval: settings.pollInterval) { [weak self] in
            _ = self?.runDueJobs()
        }
        self.task.withLock { $0 = task }
        task.start()
    }

    /// Looks for due jobs now (after a deletion queued some).
    public func wake() {
        task.withLock { $0 }?.wake()
    }

    /// Claims no further job; returns at once.
    public func drain() {
        stopRequested.store(true, ordering: .relaxed)
        task.withLock { $0 }?.drain()
    }

    /// Stops after the job in progress, if any (the rest of the queue waits for the next start).
    public func stop() {
        stopRequested.store(true, ordering: .relaxed)
        task.withLock { $0 }?.stop()
    }

    /// Runs every due job once (none after `stop`); returns how many ran. Errors are logged, never thrown.
    @discardableResult
    public func runDueJobs() -> Int {
        var ran = 0
        if executor != nil {
            do {
                while !stopRequested.load(ordering: .relaxed), try runNextJob() { ran += 1 }
            } catch {
                logger.warning("clean-up worker cannot reach the database", metadata: ["error": "\(error)"])
            }
        }
        refreshStatistics()
        return ran
    }

    private func refreshStatistics() {
        do {
            let depth = try pool.withConnection(CleanupJobStore.depth)
            let statistics = QueueStatistics(pending: depth.pending, failed: depth.failed, failedPermanent: depth.failedPermanent)
            cachedStatistics.withLock { $0 = statistics }
        } catch {
            logger.debug("cannot read the clean-up queue depth", metadata: ["error": "\(error)"])
        }
    }

    /// Claims and runs one due job; false when none is due.
    func runNextJob() throws -> Bool {
        guard let executor else { return false }
        return try pool.withTransaction { connection in
            guard let job = try CleanupJobStore.claimNext(connection) else { return false }
            let (id, kind, target, attempts, userID) = (job.id, job.kind, job.target, job.attempts, job.userID)
            let metadata: Logger.Metadata = ["job": "\(id)", "kind": "\(kind)", "attempt": "\(attempts + 1)"]
            // Names queued before the write-time rule: Google would refuse them on every attempt.
            let paths = CleanupJob.targets(of: target, kind: CleanupJob.Kind(rawValue: kind))
            let runnable =
                kind == CleanupJob.Kind.authAccount.rawValue
                ? paths
                : paths.filter { path in
                    guard let problem = StorageObjectReference.objectNameProblem(path) else { return true }
                    skips.record(problem, userID: userID, objectName: path, stage: "worker")
                    return false
                }
            guard !runnable.isEmpty else {
                try CleanupJobStore.remove(connection, id: id)
                return true
            }
            do {
                try Self.run(kind: kind, target: runnable.count == paths.count ? target : runnable.joined(separator: "\n"), on: executor)
                try CleanupJobStore.remove(connection, id: id)
                logger.info("clean-up job done", metadata: metadata)
            } catch {
                let errorText = Self.storableErrorText(error)
                if Self.isPermanent(error) || Int(attempts) + 1 >= settings.maxAttempts {
                    try CleanupJobStore.recordFailure(connection, id: id, error: errorText, retryAfterSeconds: nil)
                    logger.error(
                        "clean-up job failed permanently; it will not be retried",
                        metadata: metadata.merging(["error": "\(errorText)", "user_id": "\(userID)"]) { $1 })
                } else {
                    let delay = backoff(afterAttempts: Int(attempts) + 1, error: error)
                    try CleanupJobStore.recordFailure(connection, id: id, error: errorText, retryAfterSeconds: delay)
                    logger.warning(
                        "clean-up job failed; will retry",
                        metadata: metadata.merging(["error": "\(errorText)", "retry_in_s": "\(Int(delay))"]) { $1 })
                }
            }
            return true
        }
    }

    /// Whether retrying `error` can never help: Google's permanent 4xx, or a job this server
    /// cannot even run (`CleanupJobError`).
    static func isPermanent(_ error: any Error) -> Bool {
        if error is CleanupJobError { return true }
        guard let google = error as? GoogleAPIError else { return false }
        return google.isPermanent
    }

    /// The error as `last_error` can hold it: control characters (a NUL cannot be stored in
    /// PostgreSQL text, and Google may echo the hostile object name) as `\u{..}`, at most 1,000
    /// characters.
    static func storableErrorText(_ error: any Error) -> String {
        CleanupSkips.excerpt(String(describing: error), limit: 1000)
    }

    /// Runs one job through the executor; throws the executor's `GoogleAPIError`, or
    /// `CleanupJobError.unknownKind` for a kind this server does not know.
    static func run(kind: String, target: String, on executor: any CleanupExecutor) throws {
        switch CleanupJob.Kind(rawValue: kind) {
        case .storagePrefix?: try executor.deleteStorageFolder(prefix: target)
        case .storageObject?: try executor.deleteStorageObject(path: target)
        case .storageObjects?: try executor.deleteStorageObjects(paths: CleanupJob.targets(of: target, kind: .storageObjects))
        case .storagePrefixes?: try executor.deleteStorageFolders(prefixes: CleanupJob.targets(of: target, kind: .storagePrefixes))
        case .authAccount?: try executor.deleteAuthAccount(uid: target)
        case nil: throw CleanupJobError.unknownKind(kind)
        }
    }

    /// Exponential backoff with jitter: base x 2^(attempts-1), capped, scaled by a random factor
    /// in [0.5, 1]; never shorter than Google's `Retry-After` up to the cap (a huge one must not
    /// park a job, and the account deletion behind it, for years); the cap for errors Google says
    /// retrying will not fix (they may still be fixed by an operator).
    func backoff(afterAttempts attempts: Int, error: any Error) -> Double {
        let google = error as? GoogleAPIError
        if let google, !google.retryable { return settings.maxBackoff }
        let exponential = settings.baseBackoff * pow(2, Double(min(attempts - 1, 30)))
        let delay = min(settings.maxBackoff, exponential) * Double.random(in: 0.5...1)
        return max(delay, min(google?.retryAfter ?? 0, settings.maxBackoff))
    }
}
