import Foundation

/// Whether the app is on screen: the scheduler syncs on a timer (or stays live) only in the
/// foreground. The app sets it from SwiftUI's `scenePhase` (``SyncEngine/setAppState(_:)``).
public enum AppState: Sendable, Hashable {
    /// A scene is active: the user is looking at the data.
    case foreground
    /// No scene is active: the system may suspend the app at any moment.
    case background
}

/// Whether the device can reach the network, and when that changes: `NWPathMonitor` on Apple
/// platforms (``PathMonitorConnectivity``), ``ManualConnectivity`` in tests, previews and the sample.
public protocol Connectivity: Sendable {
    /// A new stream of the reachability: the current value first, then each change.
    func updates() -> AsyncStream<Bool>
}

/// A ``Connectivity`` set by hand (tests, previews, a command-line program that has no path
/// monitor): online until told otherwise.
public final class ManualConnectivity: Connectivity, @unchecked Sendable {
    // @unchecked: every stored property is read and written under `lock`.
    private let lock = NSLock()
    private var online: Bool
    private var listeners: [UUID: AsyncStream<Bool>.Continuation] = [:]

    /// Connectivity standing at `online` until ``set(_:)`` changes it.
    public init(online: Bool = true) {
        self.online = online
    }

    /// Whether the device is online now.
    public var isOnline: Bool { lock.withLock { online } }

    /// Changes the reachability; every stream is told when it differs.
    public func set(_ online: Bool) {
        let listeners = lock.withLock { () -> [AsyncStream<Bool>.Continuation] in
            guard self.online != online else { return [] }
            self.online = online
            return Array(self.listeners.values)
        }
        for listener in listeners { listener.yield(online) }
    }

    /// The reachability now, then each change made with ``set(_:)``.
    public func updates() -> AsyncStream<Bool> {
        let id = UUID()
        let (stream, continuation) = AsyncStream<Bool>.makeStream()
        let current = lock.withLock { () -> Bool in
            listeners[id] = continuation
            return online
        }
        continuation.yield(current)
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            self.lock.withLock { _ = self.listeners.removeValue(forKey: id) }
        }
        return stream
    }
}

#if canImport(Network)
import Network

/// The device's reachability from `NWPathMonitor` (a path whose status is `.satisfied` is online).
public struct PathMonitorConnectivity: Connectivity {
    /// The monitor of any interface (Wi-Fi, cellular, wired).
    public init() {}

    /// A new monitor's readings (the current path first), until the stream's consumer stops.
    public func updates() -> AsyncStream<Bool> {
        AsyncStream { continuation in
            let monitor = NWPathMonitor()
            monitor.pathUpdateHandler = { path in continuation.yield(path.status == .satisfied) }
            continuation.onTermination = { _ in monitor.cancel() }
            monitor.start(queue: DispatchQueue(label: "LocifyClient.PathMonitorConnectivity"))
        }
    }
}
#endif

/// The time the scheduler waits on: ``SystemSchedulerClock`` in an app, a clock moved by hand in
/// tests (so that no test waits for real time).
public protocol SchedulerClock: Sendable {
    /// Monotonic time since an arbitrary origin.
    var now: Duration { get }
    /// Returns at `deadline` (on this clock); throws when the task is cancelled.
    func sleep(until deadline: Duration) async throws
}

/// The device's monotonic clock (`ContinuousClock`: it keeps counting while the device sleeps).
public struct SystemSchedulerClock: SchedulerClock {
    private let origin = ContinuousClock.now

    /// The clock, its origin now.
    public init() {}

    /// The time since this clock was made.
    public var now: Duration { ContinuousClock.now - origin }

    /// Sleeps until `deadline`; throws when the task is cancelled.
    public func sleep(until deadline: Duration) async throws {
        try await Task.sleep(until: origin + deadline, clock: .continuous)
    }
}

/// When ``SyncEngine/start(_:)`` syncs: how long after a local edit, how often in the foreground,
/// how it backs off after failures, and whether it stays live (long-polling) in the foreground.
public struct SyncSchedule: Sendable {
    /// The quiet time after a local edit before it is pushed; each further edit within it starts
    /// it again, so a burst of edits is one sync (default 2 s).
    public var debounce: Duration = .seconds(2)
    /// The pause between two syncs while the app is in the foreground and online (default 60 s;
    /// not used while live).
    public var foregroundInterval: Duration = .seconds(60)
    /// The ceiling of the pause after a first failure (default 1 s); it doubles with each failure
    /// in a row up to ``maximumBackoff``, the pause drawn below it (full jitter), never shorter
    /// than the server's `Retry-After`.
    public var initialBackoff: Duration = .seconds(1)
    /// The highest ceiling of a pause (default 5 min).
    public var maximumBackoff: Duration = .seconds(300)
    /// The state the app is in when the schedule starts (default foreground).
    public var initialAppState: AppState = .foreground
    /// When set, the foreground uses live mode (``SyncEngine/runLive(_:)``, long-polling, each edit
    /// pushed at once) with these settings instead of the timer and the debounce; the background
    /// and the offline time stop it.
    public var liveInForeground: LiveSyncSettings?
    /// The reachability to follow; nil means always online (retries then come from the backoff).
    public var connectivity: (any Connectivity)?
    /// The time the schedule waits on (tests inject one they move by hand).
    public var clock: any SchedulerClock = SystemSchedulerClock()
    /// A random fraction in 0...1 for the jitter (tests inject a fixed one).
    public var random: @Sendable () -> Double = { Double.random(in: 0...1) }

    /// The default schedule: debounce 2 s, every 60 s in the foreground, backoff 1 s doubling up to 5 min.
    public init() {}
}

/// Why the scheduler will sync next (``SyncScheduler/nextAttempt``).
public enum ScheduledReason: Sendable, Hashable {
    /// The quiet time after local edits.
    case edits
    /// The foreground timer.
    case timer
    /// A retry after failures (the backoff, or the server's `Retry-After`).
    case retry
}

/// What a ``SyncScheduler`` is doing, for a status view (``SyncStatus/schedule``).
public struct ScheduleState: Sendable, Hashable {
    /// Whether the connectivity said online at its last reading.
    public var isOnline = true
    /// Whether live mode runs (``SyncSchedule/liveInForeground``).
    public var isLive = false
    /// Whether one of its syncs runs.
    public var isSyncing = false
    /// Failures since the last success (the backoff's count).
    public var consecutiveFailures = 0
    /// The earliest sync planned, nil when none is.
    public var nextAttempt: ScheduledAttempt?

    /// A state with these values (the default: online, idle, nothing planned).
    public init(
        isOnline: Bool = true, isLive: Bool = false, isSyncing: Bool = false, consecutiveFailures: Int = 0,
        nextAttempt: ScheduledAttempt? = nil
    ) {
        self.isOnline = isOnline
        self.isLive = isLive
        self.isSyncing = isSyncing
        self.consecutiveFailures = consecutiveFailures
        self.nextAttempt = nextAttempt
    }
}

/// The next sync the scheduler has planned: why, and when (on the schedule's clock).
public struct ScheduledAttempt: Sendable, Hashable {
    /// What planned it.
    public var reason: ScheduledReason
    /// When it is due, on ``SyncSchedule/clock``.
    public var at: Duration
}

/// Runs a sync operation when it is due: after local edits (debounced), on a timer in the
/// foreground, when connectivity returns, and on demand; after a failure, with exponential
/// backoff and full jitter (never sooner than the server's `Retry-After`), reset by a success.
/// Never two of its syncs at once. ``SyncEngine/start(_:)`` makes one for its engine; any sync
/// operation can be scheduled this way.
public actor SyncScheduler {
    /// What the scheduler runs: a sync, and optionally live mode (which returns when cancelled).
    public struct Operations: Sendable {
        /// One sync, its report or its failure.
        public var sync: @Sendable () async throws -> SyncReport
        /// Live mode until the task is cancelled (used when ``SyncSchedule/liveInForeground`` is set).
        public var live: (@Sendable (LiveSyncSettings) async -> Void)?
        /// Told of each change of the scheduler's ``ScheduleState``, in order.
        public var stateChanged: (@Sendable (ScheduleState) -> Void)?

        /// The operations to schedule.
        public init(
            sync: @escaping @Sendable () async throws -> SyncReport, live: (@Sendable (LiveSyncSettings) async -> Void)? = nil,
            stateChanged: (@Sendable (ScheduleState) -> Void)? = nil
        ) {
            self.sync = sync
            self.live = live
            self.stateChanged = stateChanged
        }
    }

    private enum Input: Sendable {
        case edit
        case appState(AppState)
        case connectivity(Bool)
        case due(ScheduledReason, generation: UInt64)
        case finished(Result<SyncReport, LocifyError>)
        /// Live mode run `run` returned by itself (another account's token), not stopped by the scheduler.
        case liveEnded(run: UInt64)
        case refresh(CheckedContinuation<SyncReport, any Error>)
    }

    private let schedule: SyncSchedule
    private let operations: Operations
    private nonisolated let inputs: AsyncStream<Input>.Continuation
    private let stream: AsyncStream<Input>
    private var loop: Task<Void, Never>?
    private var listeners: [Task<Void, Never>] = []
    private var stopped = false

    private var appState: AppState
    private var online = true
    private var syncTask: Task<Void, Never>?
    /// A trigger arrived during the running sync: sync again when it ends.
    private var again = false
    /// Pull-to-refresh calls waiting for the running sync, and for the next one.
    private var waitingOnCurrent: [CheckedContinuation<SyncReport, any Error>] = []
    private var waitingOnNext: [CheckedContinuation<SyncReport, any Error>] = []
    private var backoff = LiveBackoff()
    /// Whether the planned retry waits out a `Retry-After` (connectivity returning does not cut it short).
    private var retryAfterInForce = false
    private var planned: [ScheduledReason: (at: Duration, generation: UInt64, timer: Task<Void, Never>)] = [:]
    private var generation: UInt64 = 0
    private var liveTask: Task<Void, Never>?
    /// The number of live mode runs started: tells a run's end from an earlier one's.
    private var liveRuns: UInt64 = 0

    /// Syncs run, and failures in a row (for status displays and tests).
    public private(set) var syncCount = 0
    /// Failures since the last success.
    public var consecutiveFailures: Int { backoff.failures }
    /// The last sync's outcome (nil before the first ends).
    public private(set) var lastResult: Result<SyncReport, LocifyError>?

    /// A scheduler of `operations` on `schedule`; it does nothing until ``start()``.
    public init(_ schedule: SyncSchedule = SyncSchedule(), operations: Operations) {
        self.schedule = schedule
        self.operations = operations
        self.appState = schedule.initialAppState
        (stream, inputs) = AsyncStream<Input>.makeStream()
    }

    /// The earliest sync planned, nil when none is (a sync may be running).
    public var nextAttempt: ScheduledAttempt? {
        planned.map { ScheduledAttempt(reason: $0.key, at: $0.value.at) }.min { $0.at < $1.at }
    }

    /// Whether the connectivity said online at its last reading (always true without one).
    public var isOnline: Bool { online }

    /// Whether one of its syncs runs now.
    public var isSyncing: Bool { syncTask != nil }

    /// Whether live mode runs now (``SyncSchedule/liveInForeground``).
    public var isLive: Bool { liveTask != nil }

    /// All of the above at once.
    public var state: ScheduleState {
        ScheduleState(
            isOnline: online, isLive: isLive, isSyncing: isSyncing, consecutiveFailures: consecutiveFailures, nextAttempt: nextAttempt)
    }

    /// The state last told to ``Operations/stateChanged``.
    private var publishedState: ScheduleState?

    /// Tells ``Operations/stateChanged`` of the state when it changed.
    private func publishState() {
        let current = state
        guard current != publishedState, let stateChanged = operations.stateChanged else { return }
        publishedState = current
        stateChanged(current)
    }

    /// Starts following edits, the app state and connectivity, and syncs at once (when online).
    /// A stopped scheduler does not start again: make a new one.
    public func start() {
        guard loop == nil, !stopped else { return }
        defer { publishState() }
        let stream = self.stream
        loop = Task { [weak self] in
            for await input in stream {
                guard let self else { return }
                await self.handle(input)
            }
        }
        if let connectivity = schedule.connectivity {
            // Offline until the first reading, which starts the first sync when it says online.
            online = false
            let updates = connectivity.updates()
            let inputs = self.inputs
            listeners.append(Task { for await online in updates { inputs.yield(.connectivity(online)) } })
        } else {
            trigger(initial: true)
        }
    }

    /// Stops everything at once: the planned syncs, the running sync (cancelled), live mode; a
    /// waiting ``refresh()`` throws ``LocifyError/cancelled``.
    public func stop() {
        guard !stopped else { return }
        stopped = true
        inputs.finish()  // the loop drains what is queued (a refresh is told it was cancelled) and ends
        for listener in listeners { listener.cancel() }
        for (_, plan) in planned { plan.timer.cancel() }
        planned = [:]
        syncTask?.cancel()
        syncTask = nil  // its end is not handled once stopped: the scheduler is not syncing any more
        liveTask?.cancel()
        liveTask = nil
        for waiter in waitingOnCurrent + waitingOnNext { waiter.resume(throwing: LocifyError.cancelled) }
        waitingOnCurrent = []
        waitingOnNext = []
    }

    /// A local edit was made: a sync follows after the debounce.
    public nonisolated func localEdit() { inputs.yield(.edit) }

    /// The app entered the foreground or the background.
    public nonisolated func setAppState(_ state: AppState) { inputs.yield(.appState(state)) }

    /// Syncs now (pull-to-refresh), whatever the backoff and the connectivity say, and returns that
    /// sync's report; during a sync, the next one's (which starts when it ends). Throws the sync's
    /// failure, or ``LocifyError/cancelled`` when the scheduler stops first.
    @discardableResult
    public func refresh() async throws -> SyncReport {
        guard !stopped, loop != nil else { throw LocifyError.cancelled }
        return try await withCheckedThrowingContinuation { inputs.yield(.refresh($0)) }
    }

    // MARK: The state machine (every input is handled in turn, on the actor)

    private func handle(_ input: Input) {
        defer { if !stopped { publishState() } }
        guard !stopped else {
            if case .refresh(let waiter) = input { waiter.resume(throwing: LocifyError.cancelled) }
            return
        }
        switch input {
        case .edit:
            // Live mode pushes each edit itself; a planned retry pushes them too.
            if isLive || planned[.retry] != nil { return }
            plan(.edits, after: schedule.debounce)
        case .appState(let state):
            guard state != appState else { return }
            appState = state
            if state == .foreground {
                trigger(initial: true)  // catch up on coming back
            } else {
                cancelPlan(.timer)
                stopLive()
            }
        case .connectivity(let isOnline):
            guard isOnline != online else { return }
            online = isOnline
            if isOnline {
                if !retryAfterInForce {
                    backoff.reset()
                    cancelPlan(.retry)
                }
                trigger(initial: true)
            } else {
                cancelPlan(.timer)
                stopLive()
            }
        case .due(let reason, let generation):
            guard planned[reason]?.generation == generation else { return }
            planned[reason] = nil
            if reason == .retry { retryAfterInForce = false }
            trigger(reason)
        case .finished(let result):
            finished(result)
        case .liveEnded(let run):
            // Live mode ended without being stopped: the scheduler is not live any more, and
            // syncs again after a pause (a success starts live mode again).
            guard run == liveRuns, liveTask != nil else { return }
            liveTask = nil
            planRetry(after: nil)
        case .refresh(let waiter):
            waitingOnNext.append(waiter)
            if isSyncing { again = true } else { runSync() }
        }
    }

    /// Something asks for a sync: it runs now unless offline, a retry is planned (edits and the
    /// timer wait for it), or a sync runs (then another follows it). `initial` (start, foreground,
    /// connectivity back) also starts live mode when the schedule uses it.
    private func trigger(_ reason: ScheduledReason? = nil, initial: Bool = false) {
        guard online else { return }
        if reason != .retry && planned[.retry] != nil { return }
        if initial && startLiveIfDue() { return }
        if isLive { return }
        if isSyncing {
            again = true
        } else {
            runSync()
        }
    }

    private func runSync() {
        cancelPlan(.edits)
        cancelPlan(.timer)
        again = false
        waitingOnCurrent = waitingOnNext
        waitingOnNext = []
        syncCount += 1
        let sync = operations.sync, inputs = self.inputs
        syncTask = Task {
            do {
                inputs.yield(.finished(.success(try await sync())))
            } catch {
                inputs.yield(.finished(.failure(SyncEngine.locifyError(error))))
            }
        }
    }

    private func finished(_ result: Result<SyncReport, LocifyError>) {
        syncTask = nil
        lastResult = result
        for waiter in waitingOnCurrent { waiter.resume(with: result.mapError { $0 as any Error }) }
        waitingOnCurrent = []
        switch result {
        case .success:
            backoff.reset()
            retryAfterInForce = false
            cancelPlan(.retry)
            if !waitingOnNext.isEmpty {
                runSync()
            } else if again {
                trigger()
            } else if !isLive && !startLiveIfDue() && appState == .foreground && online {
                plan(.timer, after: schedule.foregroundInterval)
            }
        case .failure(let error):
            // A cancelled sync is retried too: the scheduler cancels its syncs only when it stops
            // (and then takes in no result), so this cancellation came from elsewhere.
            planRetry(after: error)
            if !waitingOnNext.isEmpty { runSync() }  // a pull-to-refresh made meanwhile still runs
        }
    }

    /// Plans the next attempt after one more failure (`error`, nil when live mode ended), with
    /// the backoff, never sooner than the server's `Retry-After`.
    private func planRetry(after error: LocifyError?) {
        let retryAfter = error?.retryAfterSeconds
        let pause = backoff.pause(
            retryAfter: retryAfter, initial: schedule.initialBackoff, maximum: schedule.maximumBackoff, random: schedule.random)
        retryAfterInForce = retryAfter != nil
        cancelPlan(.edits)
        cancelPlan(.timer)
        plan(.retry, after: pause)
    }

    // MARK: Planned syncs

    private func plan(_ reason: ScheduledReason, after delay: Duration) {
        cancelPlan(reason)
        generation &+= 1
        let at = schedule.clock.now + delay, generation = self.generation
        let clock = schedule.clock, inputs = self.inputs
        let timer = Task {
            do {
                try await clock.sleep(until: at)
            } catch {
                return
            }
            inputs.yield(.due(reason, generation: generation))
        }
        planned[reason] = (at, generation, timer)
    }

    private func cancelPlan(_ reason: ScheduledReason) {
        planned.removeValue(forKey: reason)?.timer.cancel()
    }

    // MARK: Live mode in the foreground

    /// Starts live mode when the schedule uses it and the app is online in the foreground.
    private func startLiveIfDue() -> Bool {
        guard let settings = schedule.liveInForeground, let live = operations.live, appState == .foreground, online else { return false }
        stopLive()  // after a reconnection, a fresh start rather than live mode's own backoff
        cancelPlan(.timer)
        cancelPlan(.edits)
        liveRuns &+= 1
        let run = liveRuns, inputs = self.inputs
        liveTask = Task {
            await live(settings)
            inputs.yield(.liveEnded(run: run))
        }
        return true
    }

    private func stopLive() {
        liveTask?.cancel()
        liveTask = nil
    }
}
