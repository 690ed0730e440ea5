import Dispatch
import Glibc
import Logging
import Primitives
import Synchronization

/// Sends notifications on a channel from a connection and a thread of its own: what `notify`
/// queued meanwhile (each payload once) goes out in one statement, committed asynchronously
/// (`synchronous_commit = off`: a notification needs no durability), packed into as few
/// notifications as fit PostgreSQL's payload limit, joined by `separator` (which no payload may
/// contain; listeners split on it): each notification costs PostgreSQL, and every listening
/// backend and process, about the same whatever its payload.
///
/// Why not `NOTIFY` inside the transaction whose commit it announces: PostgreSQL serialises the
/// commits of notifying transactions with one global lock, held from the queue insert until the
/// commit is flushed, so every write would wait for the flushes of all the others (measured with
/// durable commits: 0.07 times the write throughput at 32 clients, bench/RESULTS.md). Sent from
/// here, after the commit, a notification holds that lock for a few microseconds and no write
/// waits for it. The price: a notification queued when the process dies is never sent (the
/// caller's listeners must tolerate lost notifications anyway).
///
/// Sends are at least `minimumInterval` apart: a lone notification goes out at once, and under
/// load what is queued meanwhile shares one statement, so the notifications cost PostgreSQL (and
/// every listening instance) at most one transaction per interval whatever the write rate. A
/// failed send is retried, with the payloads queued since, after a pause (`ReconnectingConnection`:
/// `minimumBackoff` doubling to `maximumBackoff`); at most `maxQueued` distinct payloads wait,
/// further ones are dropped (and counted). A send unanswered within `answerTimeout` (a half-open
/// connection after a failover) counts as a lost connection, and the connection's TCP user timeout
/// and keepalives (`deadNetworkTimeout`) break a silent one within seconds, so wake-ups resume on a
/// new connection instead of stalling for minutes. `stop` sends what is still queued first.
public final class PostgresNotifier: Sendable {
    /// What the notifier has done so far, for metrics and tests.
    public struct Statistics: Sendable, Equatable {
        /// Payloads sent.
        public var sent: Int
        /// Statements that failed (each retried).
        public var failures: Int
        /// Payloads dropped because `maxQueued` were waiting.
        public var dropped: Int
    }

    private struct State {
        var queued: [String] = []
        var queuedSet: Set<String> = []
        var sent = 0
        var failures = 0
        var dropped = 0
    }

    /// The channel notified.
    public let channel: String
    /// Most distinct payloads waiting to be sent.
    public let maxQueued: Int
    /// The shortest time between two sends.
    public let minimumInterval: Duration
    /// What joins the payloads packed into one notification.
    public let separator: Character
    /// The longest packed payload, bytes (PostgreSQL's limit is 8,000).
    static let maxPackedBytes = 7_900
    private let configuration: PostgresConfiguration
    private let timing: PostgresListener.Timing
    private let logger: Logger
    private let state = Mutex(State())
    /// Signalled when the queue turns non-empty, and by `stop`.
    private let work = DispatchSemaphore(value: 0)
    private let thread = BackgroundThread(name: "pg-notify")

    /// A notifier on `channel` (a lower-case SQL identifier), connecting with `configuration`
    /// (`-notify` appended to its application name). Nothing is sent until `start()`.
    public init(
        configuration: PostgresConfiguration, channel: String, timing: PostgresListener.Timing = PostgresListener.Timing(),
        minimumInterval: Duration = .milliseconds(5), separator: Character = "\n", maxQueued: Int = 100_000, logger: Logger
    ) {
        self.channel = channel
        self.separator = separator
        self.minimumInterval = minimumInterval
        self.maxQueued = max(1, maxQueued)
        var configuration = configuration
        configuration.applicationName += "-notify"
        configuration.sessionSettings["synchronous_commit"] = "off"
        self.configuration = configuration
        self.timing = timing
        self.logger = logger
    }

    /// Starts the sending thread (once).
    public func start() {
        thread.start { [self] in run() }
    }

    /// Sends what is still queued (one attempt, within the connect and answer timeouts: at a
    /// SIGTERM, the wake-ups of the last writes still go out), then stops the thread. Safe to call
    /// more than once.
    public func stop() {
        thread.stop { work.signal() }
    }

    /// Queues a notification with `payload` (once however often it is queued before it is sent;
    /// it must not contain `separator`, and may hold at most 7,900 bytes). Any thread; never
    /// blocks.
    public func notify(_ payload: String) {
        if thread.isStopping { return }
        let wake = state.withLock { state -> Bool in
            guard !state.queuedSet.contains(payload) else { return false }
            guard state.queued.count < maxQueued else {
                state.dropped += 1
                return false
            }
            state.queued.append(payload)
            state.queuedSet.insert(payload)
            return state.queued.count == 1
        }
        if wake { work.signal() }
    }

    /// The counts so far.
    public var statistics: Statistics {
        state.withLock { Statistics(sent: $0.sent, failures: $0.failures, dropped: $0.dropped) }
    }

    /// `payloads` joined by `separator` into as few strings of at most `maxPackedBytes` as the
    /// order allows (a payload longer than that goes alone).
    static func packed(_ payloads: [String], separator: Character) -> [String] {
        var packed: [String] = []
        var current = ""
        for payload in payloads {
            if !current.isEmpty && current.utf8.count + 1 + payload.utf8.count > maxPackedBytes {
                packed.append(current)
                current = ""
            }
            if !current.isEmpty { current.append(separator) }
            current += payload
        }
        if !current.isEmpty { packed.append(current) }
        return packed
    }

    // MARK: - The thread

    private func run() {
        let link = ReconnectingConnection(
            configuration: configuration, timing: timing, logger: logger, purpose: "send notifications",
            metadata: ["channel": "\(channel)"])
        let clock = timing.clock
        var lastSend = clock.now() - minimumInterval
        while true {
            // Under load, what arrives meanwhile joins this batch.
            pause(until: lastSend + minimumInterval)
            let batch = state.withLock { state -> [String] in
                let batch = state.queued
                state.queued = []
                state.queuedSet = []
                return batch
            }
            if batch.isEmpty {
                if thread.isStopping { return }
                work.wait()
                continue
            }
            do {
                let connection = try link.open()
                lastSend = clock.now()
                try connection.query(
                    "SELECT count(pg_notify(\(channel), payload)) FROM unnest(\(Self.packed(batch, separator: separator))) AS payload",
                    answerWithin: timing.answerTimeout, clock: clock)
                state.withLock { $0.sent += batch.count }
                link.succeeded()
            } catch {
                state.withLock { state in
                    state.failures += 1
                    // Sent later, with what was queued meanwhile.
                    for payload in batch where !state.queuedSet.contains(payload) && state.queued.count < maxQueued {
                        state.queued.append(payload)
                        state.queuedSet.insert(payload)
                    }
                }
                // Stopping: the last attempt failed, and what it held is dropped.
                if link.failed(
                    error,
                    pause: { milliseconds in
                        pause(until: clock.now() + .milliseconds(milliseconds))
                        return thread.isStopping
                    })
                {
                    return
                }
            }
        }
    }

    /// Waits until `deadline` on the timing's clock, or until `stop` is called. (The semaphore's
    /// own timeout is only how long one wait may last: a `notify` in between signals it, and the
    /// wait resumes.)
    private func pause(until deadline: Duration) {
        while !thread.isStopping {
            let remaining = deadline - timing.clock.now()
            guard remaining > .zero else { return }
            _ = work.wait(timeout: .now() + .nanoseconds(Int(clamping: remaining.nanoseconds)))
        }
    }
}
