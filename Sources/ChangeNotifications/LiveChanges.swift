import Logging
import Postgres
import Synchronization

/// Something waiting for a user's next change (a held pull request): `wake` asks it to read the
/// feed again. Called on the listener's thread: it must be quick and never block.
public protocol ChangeWaiter: AnyObject, Sendable {
    func wake()
}

/// Wakes the requests waiting for a user's next change, across server instances, through
/// PostgreSQL: after a change of a user has committed (the domain announces it: `Locify`'s
/// `ChangeAnnouncer`, wired to `changed` by the composition root), `changed` sends a notification
/// with the user id on the channel `locify_changes` (`PostgresNotifier`: after the commit, never inside the
/// write's transaction, whose commit it would serialise with every other write's); one
/// `PostgresListener` per instance hands each notification to that user's waiters. After the
/// listening connection was lost and re-established, every waiter is woken, since the
/// notifications of that gap are lost: a woken waiter reads the feed from its cursor, so a missed
/// notification can delay a change, never lose it.
///
/// Each user may have at most `maxWaitersPerUser` waiters at once.
public final class LiveChanges: Sendable {
    /// The notification channel the write transactions notify.
    public static let channel = "locify_changes"

    /// What the live machinery has done so far, for metrics.
    public struct Statistics: Sendable, Equatable {
        /// Waiters registered now.
        public var waiting: Int
        /// Waiters woken (by a notification of their user or after the listener reconnected).
        public var wakeUps: Int
        /// Notifications received.
        public var notifications: Int
        /// Notifications sent (users whose writes committed here).
        public var notificationsSent: Int
        /// Times the listening connection was re-established.
        public var listenReconnects: Int
        /// Whether a connection listens now.
        public var isListening: Bool
    }

    /// Most waiters of one user at once.
    public var maxWaitersPerUser: Int { waiters.maxPerUser }
    private let waiters: WaiterTable
    private let listener: PostgresListener
    private let notifier: PostgresNotifier

    /// A registry of waiters, listening with `configuration` once `start()` runs.
    public init(
        configuration: PostgresConfiguration, maxWaitersPerUser: Int,
        timing: PostgresListener.Timing = PostgresListener.Timing(), logger: Logger
    ) {
        let waiters = WaiterTable(maxPerUser: max(1, maxWaitersPerUser))
        self.waiters = waiters
        listener = PostgresListener(
            configuration: configuration, channel: Self.channel, timing: timing, logger: logger,
            onListening: { waiters.wakeAll() },
            onNotification: { payload in
                // One notification carries the users of a batch (PostgresNotifier), one a line: a
                // user id holds no control character (IDTokenVerifier).
                for userID in payload.split(separator: "\n", omittingEmptySubsequences: true) { waiters.wake(String(userID)) }
            })
        notifier = PostgresNotifier(configuration: configuration, channel: Self.channel, timing: timing, logger: logger)
    }

    /// Starts listening and notifying.
    public func start() {
        listener.start()
        notifier.start()
    }

    /// Stops listening and notifying (the waiters are not woken: the server answers them as it
    /// drains).
    public func stop() {
        notifier.stop()
        listener.stop()
    }

    /// Tells every instance (this one included) that a change of `userID` has committed: their
    /// waiters of that user read the feed again. Call it after the commit, never before. Never
    /// blocks: the notification goes out on the notifier's thread.
    public func changed(_ userID: String) {
        notifier.notify(userID)
    }

    /// Registers `waiter` for `userID`'s next change; false (nothing registered) when the user
    /// already has `maxWaitersPerUser` waiters.
    public func add(_ waiter: any ChangeWaiter, for userID: String) -> Bool {
        waiters.add(waiter, for: userID)
    }

    /// Forgets `waiter` (nothing when it is not registered).
    public func remove(_ waiter: any ChangeWaiter, for userID: String) {
        waiters.remove(waiter, for: userID)
    }

    /// The counts so far.
    public var statistics: Statistics {
        let listening = listener.statistics
        let (waiting, wakeUps) = waiters.counts
        return Statistics(
            waiting: waiting, wakeUps: wakeUps, notifications: listening.notifications,
            notificationsSent: notifier.statistics.sent, listenReconnects: listening.reconnects,
            isListening: listening.isListening)
    }
}

/// The waiters of each user, behind one lock; waking copies them out and calls them unlocked.
private final class WaiterTable: Sendable {
    private struct State {
        var waiters: [String: [any ChangeWaiter]] = [:]
        var count = 0
        var wakeUps = 0
    }

    let maxPerUser: Int
    private let state = Mutex(State())

    init(maxPerUser: Int) {
        self.maxPerUser = maxPerUser
    }

    var counts: (waiting: Int, wakeUps: Int) {
        state.withLock { ($0.count, $0.wakeUps) }
    }

    func add(_ waiter: any ChangeWaiter, for userID: String) -> Bool {
        state.withLock { state in
            var waiters = state.waiters[userID] ?? []
            guard waiters.count < maxPerUser else { return false }
            waiters.append(waiter)
            state.waiters[userID] = waiters
            state.count += 1
            return true
        }
    }

    func remove(_ waiter: any ChangeWaiter, for userID: String) {
        state.withLock { state in
            guard var waiters = state.waiters[userID], let index = waiters.firstIndex(where: { $0 === waiter }) else { return }
            waiters.remove(at: index)
            state.waiters[userID] = waiters.isEmpty ? nil : waiters
            state.count -= 1
        }
    }

    /// Wakes `userID`'s waiters (a change of theirs committed).
    func wake(_ userID: String) {
        let waiters = state.withLock { state -> [any ChangeWaiter] in
            let waiters = state.waiters[userID] ?? []
            state.wakeUps += waiters.count
            return waiters
        }
        for waiter in waiters { waiter.wake() }
    }

    /// Wakes every waiter (the listener listens again: notifications may have been lost).
    func wakeAll() {
        let waiters = state.withLock { state -> [any ChangeWaiter] in
            let waiters = state.waiters.values.flatMap { $0 }
            state.wakeUps += waiters.count
            return waiters
        }
        for waiter in waiters { waiter.wake() }
    }
}
