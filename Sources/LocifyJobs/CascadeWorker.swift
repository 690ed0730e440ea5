import Locify
import Logging
import Postgres
import Primitives
import Synchronization

/// Settles the cascades whose locations are still to be hidden (`PendingCascades`): woken after
/// each category delete, and every `interval` for those another instance, or one that stopped,
/// left behind. Each transaction hides one batch of at most `batchSize` locations of the oldest
/// pending cascade, so no statement grows with the category and the user's writes wait at most
/// one batch. A user whose batch fails is skipped for a while that doubles with each failure
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
        pool: ConnectionPool, cascades: PendingCascades, interval: Duration = .seconds(5), batchSize: Int = 2_000,
        retryDelay: Duration = .seconds(1), maximumRetryDelay: Duration = .seconds(300), clock: MonotonicClock = .system,
        announce: ChangeAnnouncer? = nil, cleanupQueued: (@Sendable () -> Void)? = nil, logger: Logger
    ) {
        let settling = Settling(
            pool: pool, cascades: cascades, batchSize: batchSize,
            backoff: Backoff(clock: clock, first: retryDelay, maximum: maximumRetryDelay), draining: Flag(), announce: announce,
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

/// What one round of the worker needs, and the round.
private struct Settling: Sendable {
    let pool: ConnectionPool
    let cascades: PendingCascades
    let batchSize: Int
    let backoff: Backoff
    let draining: Flag
    let announce: ChangeAnnouncer?
    let cleanupQueued: (@Sendable () -> Void)?
    let logger: Logger

    /// Settles batch after batch, oldest cascade first, until none is left (but those of users
    /// backing off) or the worker drains; returns how many users it left with none pending.
    func all() -> Int {
        var settled = 0
        while !draining.isSet {
            var user: String?
            do {
                let done = try pool.withTransaction { connection -> Bool? in
                    user = try PendingCascades.nextUser(connection, skipping: backoff.waiting())
                    guard let user else { return nil }
                    return try cascades.settleBatch(connection, userID: user, limit: batchSize)
                }
                guard let done, let user else { return settled }
                backoff.succeeded(user)
                announce?(user)
                cleanupQueued?()
                if done { settled += 1 }
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
