import Locify
import Logging
import Postgres
import Primitives
import Synchronization

/// Settles the cascades whose locations are still to be hidden (`PendingCascades`): woken after
/// each category delete, and every `interval` for those another instance, or one that stopped,
/// left behind. Each transaction hides one batch of at most `batchSize` locations of the oldest
/// pending cascade, starting where that user's previous batch left off, so no statement grows
/// with the category, or with the part already settled, and the user's writes wait at most one
/// batch (500 by default: 30-60 ms on a loaded 2-core machine, against 110-150 ms for 2,000,
/// bench/RESULTS.md). A user whose batch fails is skipped for a while that doubles with each failure
/// (`retryDelay`, up to `maximumRetryDelay`) while the others go on. Each batch committed is
/// announced (`announce`: the user's waiting pulls are woken) and wakes the clean-up worker
/// (`cleanupQueued`: the batch queued the Storage clean-up of the locations it hid).
public final class CascadeWorker: Sendable {
    private let settling: Settling
    private let task: PeriodicTask

    /// A worker on `pool`, run every `interval` once started, settling `cascades` (the services'
    /// `LocifyServices.cascades`) `batchSize` locations per transaction, telling `announce` the
    /// user of each batch and `cleanupQueued` that it queued clean-up; `clock` times the back-off
    /// of failing users.
    public init(
        pool: ConnectionPool, cascades: PendingCascades, interval: Duration = .seconds(5), batchSize: Int = 500,
        retryDelay: Duration = .seconds(1), maximumRetryDelay: Duration = .seconds(300), clock: MonotonicClock = .system,
        announce: ChangeAnnouncer? = nil, cleanupQueued: (@Sendable () -> Void)? = nil, logger: Logger
    ) {
        let settling = Settling(
            pool: pool, cascades: cascades, batchSize: batchSize,
            backoff: Backoff(clock: clock, first: retryDelay, maximum: maximumRetryDelay), announce: announce,
            cleanupQueued: cleanupQueued, logger: logger)
        self.settling = settling
        self.task = PeriodicTask(name: "locify.cascade-worker", interval: interval, clock: clock) { _ = settling.all() }
    }

    /// Starts the worker on its own thread.
    public func start() { task.start() }
    /// Looks for pending cascades now (after a category delete).
    public func wake() { task.wake() }
    /// Settles no further batch; returns at once.
    public func drain() {
        settling.draining.set()
        task.drain()
    }

    /// Stops after the batch being settled, if any.
    public func stop() {
        settling.draining.set()
        task.stop()
    }

    /// Settles every pending cascade now, batch by batch, but those of users backing off; returns
    /// how many users it left with none pending.
    @discardableResult
    public func settleNow() -> Int { settling.all() }
}

/// What the worker's rounds share, and a round.
private final class Settling: Sendable {
    let pool: ConnectionPool
    let cascades: PendingCascades
    let batchSize: Int
    let backoff: Backoff
    let draining = Flag()
    let announce: ChangeAnnouncer?
    let cleanupQueued: (@Sendable () -> Void)?
    let logger: Logger
    /// Where each user's last batch left off (the next starts there; lost on a restart, when the
    /// next batch starts from the first location left).
    let positions = Mutex([String: SettlingPosition]())

    init(
        pool: ConnectionPool, cascades: PendingCascades, batchSize: Int, backoff: Backoff, announce: ChangeAnnouncer?,
        cleanupQueued: (@Sendable () -> Void)?, logger: Logger
    ) {
        self.pool = pool
        self.cascades = cascades
        self.batchSize = batchSize
        self.backoff = backoff
        self.announce = announce
        self.cleanupQueued = cleanupQueued
        self.logger = logger
    }

    /// Settles batch after batch, oldest cascade first, until none is left (but those of users
    /// backing off) or the worker drains; returns how many users it left with none pending.
    func all() -> Int {
        var settled = 0
        while !draining.isSet {
            var user: String?
            do {
                let batch = try pool.withTransaction { connection -> SettledBatch? in
                    user = try PendingCascades.nextUser(connection, skipping: backoff.waiting())
                    guard let user else { return nil }
                    return try cascades.settleBatch(connection, userID: user, limit: batchSize, after: positions.withLock { $0[user] })
                }
                guard let batch, let user else { return settled }
                positions.withLock { $0[user] = batch.position }
                backoff.succeeded(user)
                announce?(user)
                cleanupQueued?()
                if batch.listEmpty { settled += 1 }
            } catch {
                guard let user else {
                    logger.warning("settling cascades failed; will retry", metadata: ["error": "\(error)"])
                    return settled
                }
                let delay = backoff.failed(user)
                logger.warning(
                    "settling a user's cascade failed; retrying that user later",
                    metadata: ["user": "\(user)", "retry_in": "\(delay)", "error": "\(error)"])
            }
        }
        return settled
    }
}

/// A flag set once, read from any thread.
private final class Flag: Sendable {
    private let value = Atomic<Bool>(false)

    func set() { value.store(true, ordering: .relaxed) }
    var isSet: Bool { value.load(ordering: .relaxed) }
}

/// The users whose settling failed, each skipped until a time that doubles with each failure.
private final class Backoff: Sendable {
    private let clock: MonotonicClock
    private let first: Duration
    private let maximum: Duration
    private let users = Mutex([String: (failures: Int, retryAt: Duration)]())

    init(clock: MonotonicClock, first: Duration, maximum: Duration) {
        self.clock = clock
        self.first = first
        self.maximum = maximum
    }

    /// The users to skip now.
    func waiting() -> [String] {
        let now = clock.now()
        return users.withLock { users in users.filter { $0.value.retryAt > now }.map(\.key) }
    }

    /// Records a failure of `user`; returns how long the user is skipped.
    func failed(_ user: String) -> Duration {
        let now = clock.now()
        return users.withLock { users in
            let failures = (users[user]?.failures ?? 0) + 1
            let delay = min(first * (1 << min(failures - 1, 20)), maximum)
            users[user] = (failures, now + delay)
            return delay
        }
    }

    /// Forgets the failures of `user`, whose batch went through.
    func succeeded(_ user: String) {
        _ = users.withLock { $0.removeValue(forKey: user) }
    }
}
