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
/// announced (`announce`: the user's waiting pulls are woken).
public final class CascadeWorker: Sendable {
    private let pool: ConnectionPool
    private let announce: ChangeAnnouncer?
    private let logger: Logger
    private let batchSize: Int
    private let backoff: Backoff
    private let draining: Flag
    private let task: PeriodicTask

    /// A worker on `pool`, run every `interval` once started, hiding `batchSize` locations per
    /// transaction and telling `announce` the user of each batch; `clock` times the back-off of
    /// failing users.
    public init(
        pool: ConnectionPool, interval: Duration = .seconds(5), batchSize: Int = 2_000, retryDelay: Duration = .seconds(1),
        maximumRetryDelay: Duration = .seconds(300), clock: MonotonicClock = .system, announce: ChangeAnnouncer? = nil, logger: Logger
    ) {
        self.pool = pool
        self.announce = announce
        self.logger = logger
        self.batchSize = batchSize
        let backoff = Backoff(clock: clock, first: retryDelay, maximum: maximumRetryDelay)
        self.backoff = backoff
        let draining = Flag()
        self.draining = draining
        self.task = PeriodicTask(name: "locify.cascade-worker", interval: interval, clock: clock) {
            _ = CascadeWorker.settleAll(pool: pool, batchSize: batchSize, backoff: backoff, draining: draining, announce: announce, logger: logger)
        }
    }

    /// Starts the worker on its own thread.
    public func start() { task.start() }
    /// Looks for pending cascades now (after a category delete).
    public func wake() { task.wake() }
    /// Settles no further batch; returns at once.
    public func drain() {
        draining.set()
        task.drain()
    }

    /// Stops after the batch being settled, if any.
    public func stop() {
        draining.set()
        task.stop()
    }

    /// Settles every pending cascade now, batch by batch, but those of users backing off; returns
    /// how many users it left with none pending.
    @discardableResult
    public func settleNow() -> Int {
        Self.settleAll(pool: pool, batchSize: batchSize, backoff: backoff, draining: draining, announce: announce, logger: logger)
    }

    private static func settleAll(
        pool: ConnectionPool, batchSize: Int, backoff: Backoff, draining: Flag, announce: ChangeAnnouncer?, logger: Logger
    ) -> Int {
        var settled = 0
        while !draining.isSet {
            var user: String?
            do {
                let done = try pool.withTransaction { connection -> Bool? in
                    user = try PendingCascades.nextUser(connection, skipping: backoff.waiting())
                    guard let user else { return nil }
                    return try PendingCascades.settleBatch(connection, userID: user, limit: batchSize)
                }
                guard let done, let user else { return settled }
                backoff.succeeded(user)
                announce?(user)
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
