import Foundation
import LocifyClient
import Synchronization
import Testing

/// A ``SchedulerClock`` moved by hand: a sleep returns only when ``advance(by:)`` passes its
/// deadline (or its task is cancelled), so the scheduler's tests never wait for real time.
final class HandMovedClock: SchedulerClock {
    private struct State {
        var now: Duration = .zero
        var sleepers: [UUID: (deadline: Duration, continuation: CheckedContinuation<Void, any Error>)] = [:]
        var cancelledEarly: Set<UUID> = []
    }

    private let state = Mutex(State())

    var now: Duration { state.withLock { $0.now } }

    /// The sleeps under way.
    var sleepers: Int { state.withLock { $0.sleepers.count } }

    func sleep(until deadline: Duration) async throws {
        let id = UUID()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resume: Result<Void, any Error>? = state.withLock { state in
                    if state.cancelledEarly.remove(id) != nil { return .failure(CancellationError()) }
                    if deadline <= state.now { return .success(()) }
                    state.sleepers[id] = (deadline, continuation)
                    return nil
                }
                if let resume { continuation.resume(with: resume) }
            }
        } onCancel: {
            let sleeper = state.withLock { state in
                let sleeper = state.sleepers.removeValue(forKey: id)
                if sleeper == nil { state.cancelledEarly.insert(id) }
                return sleeper
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves the time forward and wakes the sleeps now due.
    func advance(by duration: Duration) {
        let due = state.withLock { state in
            state.now += duration
            let due = state.sleepers.filter { $0.value.deadline <= state.now }
            for id in due.keys { state.sleepers[id] = nil }
            return due.values.map(\.continuation)
        }
        for continuation in due { continuation.resume() }
    }
}

/// A sync operation for the scheduler: it counts calls and overlaps, answers from a script
/// (success when the script is empty), and can be held until released.
final class ScriptedSync: Sendable {
    private struct State {
        var calls = 0
        var running = 0
        var mostAtOnce = 0
        var cancelled = 0
        var script: [Result<SyncReport, LocifyError>] = []
        var holding = false
        var held: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    var calls: Int { state.withLock { $0.calls } }
    var mostAtOnce: Int { state.withLock { $0.mostAtOnce } }
    var cancelled: Int { state.withLock { $0.cancelled } }
    var running: Int { state.withLock { $0.running } }

    /// The next answers, in order.
    func answer(_ results: Result<SyncReport, LocifyError>...) {
        state.withLock { $0.script += results }
    }

    /// Every further sync waits in ``hold()`` until ``release()``.
    func hold() { state.withLock { $0.holding = true } }

    func release() {
        let held = state.withLock { state in
            state.holding = false
            defer { state.held = [] }
            return state.held
        }
        for continuation in held { continuation.resume() }
    }

    var operations: SyncScheduler.Operations {
        SyncScheduler.Operations(sync: { try await self.sync() })
    }

    private func sync() async throws -> SyncReport {
        let holding = state.withLock { state in
            state.calls += 1
            state.running += 1
            state.mostAtOnce = max(state.mostAtOnce, state.running)
            return state.holding
        }
        defer { state.withLock { $0.running -= 1 } }
        if holding {
            await withCheckedContinuation { continuation in
                let release = state.withLock { state in
                    if state.holding { state.held.append(continuation) }
                    return !state.holding
                }
                if release { continuation.resume() }
            }
            // A held sync ends at its release; a stopped scheduler's release says cancelled.
        }
        if Task.isCancelled {
            state.withLock { $0.cancelled += 1 }
            throw LocifyError.cancelled
        }
        let next = state.withLock { $0.script.isEmpty ? nil : $0.script.removeFirst() }
        return try (next ?? .success(SyncReport())).get()
    }
}

/// A scheduler on a hand-moved clock, its sync scripted.
struct ScheduleRig {
    let clock = HandMovedClock()
    let sync = ScriptedSync()
    let connectivity: ManualConnectivity
    let scheduler: SyncScheduler

    init(
        appState: AppState = .background, online: Bool = true, random: @escaping @Sendable () -> Double = { 1 },
        live: (@Sendable (LiveSyncSettings) async -> Void)? = nil, configure: (inout SyncSchedule) -> Void = { _ in }
    ) {
        connectivity = ManualConnectivity(online: online)
        var schedule = SyncSchedule()
        schedule.initialAppState = appState
        schedule.connectivity = connectivity
        schedule.clock = clock
        schedule.random = random
        schedule.debounce = .seconds(2)
        schedule.foregroundInterval = .seconds(60)
        schedule.initialBackoff = .seconds(1)
        schedule.maximumBackoff = .seconds(60)
        configure(&schedule)
        var operations = sync.operations
        operations.live = live
        scheduler = SyncScheduler(schedule, operations: operations)
    }

    /// Waits until no sync runs and `calls` have been made (the scheduler took in their ends).
    func settled(calls: Int) async -> Bool {
        await until {
            guard sync.calls == calls, sync.running == 0 else { return false }
            let isSyncing = await scheduler.isSyncing
            let ended = await scheduler.lastResult != nil
            return !isSyncing && (ended || calls == 0)
        }
    }

    /// Waits until the next planned sync is `reason`, `delay` from now on the hand-moved clock.
    func planned(_ reason: ScheduledReason, in delay: Duration) async -> Bool {
        await until {
            guard let next = await scheduler.nextAttempt, next.reason == reason else { return false }
            let error = next.at - (clock.now + delay)
            return error <= .microseconds(1) && error >= .microseconds(-1)
        }
    }

    /// Moves the clock to the next planned sync.
    func advanceToNextAttempt() async throws {
        let next = try #require(await scheduler.nextAttempt)
        clock.advance(by: next.at - clock.now)
    }
}

/// Seconds of a pause, for messages.
private func seconds(_ duration: Duration) -> Double { Double(duration / .milliseconds(1)) / 1000 }

private let offline = LocifyError.network(NetworkFailure(code: .notConnectedToInternet, message: "offline"))

@Suite("SyncScheduler: when start() syncs, on a hand-moved clock (issue 26 item 3)")
struct SyncSchedulerTests {
    @Test("a burst of edits is one sync, after the debounce counted from the last edit")
    func debounceCoalesces() async throws {
        let rig = ScheduleRig()
        await rig.scheduler.start()
        defer { Task { await rig.scheduler.stop() } }
        #expect(await rig.settled(calls: 1), "start() syncs at once")
        #expect(await rig.scheduler.nextAttempt == nil, "in the background nothing else is planned")
        for _ in 0..<3 {
            rig.scheduler.localEdit()
            #expect(await rig.planned(.edits, in: .seconds(2)))
            rig.clock.advance(by: .seconds(1))
        }
        #expect(rig.sync.calls == 1, "each edit within the quiet time starts it again")
        rig.clock.advance(by: .milliseconds(999))
        #expect(await rig.scheduler.nextAttempt?.reason == .edits)
        #expect(rig.sync.calls == 1)
        rig.clock.advance(by: .milliseconds(1))
        #expect(await rig.settled(calls: 2), "one sync for the three edits")
        #expect(await rig.scheduler.nextAttempt == nil)
        #expect(rig.clock.sleepers == 0)
    }

    @Test(
        "failures back off exponentially with full jitter up to the cap, each pause the jitter's fraction of its ceiling",
        arguments: [1.0, 0.5, 0.25])
    func backoffGrowsToCap(fraction: Double) async throws {
        let rig = ScheduleRig(random: { fraction })
        for _ in 0..<9 { rig.sync.answer(.failure(offline)) }
        await rig.scheduler.start()
        defer { Task { await rig.scheduler.stop() } }
        let ceilings: [Duration] = [1, 2, 4, 8, 16, 32, 60, 60, 60].map { .seconds($0) }
        for (failure, ceiling) in ceilings.enumerated() {
            #expect(await rig.settled(calls: failure + 1))
            #expect(await rig.scheduler.consecutiveFailures == failure + 1)
            let pause = ceiling * fraction
            #expect(await rig.planned(.retry, in: pause), "failure \(failure + 1): a pause of \(seconds(pause)) s")
            // Edits and connectivity-less triggers wait for the retry rather than hammering.
            rig.scheduler.localEdit()
            try await rig.advanceToNextAttempt()
        }
        #expect(await rig.settled(calls: 10))
        #expect(await rig.scheduler.consecutiveFailures == 0, "the 10th sync succeeded: the count starts again")
        #expect(rig.sync.mostAtOnce == 1)
    }

    @Test("jitter stays within [0, ceiling] for any random fraction, even one out of range")
    func jitterBounds() async throws {
        let draws = Mutex<[Double]>([0.001, 1, 0.37, 1.7, 0.99, -0.2])
        let rig = ScheduleRig(random: { draws.withLock { $0.isEmpty ? 0.5 : $0.removeFirst() } })
        for _ in 0..<6 { rig.sync.answer(.failure(offline)) }
        await rig.scheduler.start()
        defer { Task { await rig.scheduler.stop() } }
        let expected: [Duration] = [.milliseconds(1), .seconds(2), .seconds(4) * 0.37, .seconds(8), .seconds(16) * 0.99]
        for (failure, pause) in expected.enumerated() {
            #expect(await rig.settled(calls: failure + 1))
            #expect(await rig.planned(.retry, in: pause), "failure \(failure + 1)")
            try await rig.advanceToNextAttempt()
        }
        // The sixth failure draws below 0: no pause, the retry runs at once (and succeeds).
        #expect(await rig.settled(calls: 7))
        let waited: Duration = expected.reduce(.zero, +)
        #expect(rig.clock.now == waited)
    }

    @Test("a Retry-After is waited out in full, before the jitter, and connectivity coming back does not cut it short")
    func retryAfterHonoured() async throws {
        let rig = ScheduleRig(random: { 0.5 })
        let busy = LocifyError.rateLimited(ServerError(status: 429, code: "S001", message: "slow down"), retryAfter: 30)
        rig.sync.answer(.failure(busy), .failure(.unavailable(ServerError(status: 503, code: "S003", message: "restarting"), retryAfter: 7)))
        await rig.scheduler.start()
        defer { Task { await rig.scheduler.stop() } }
        #expect(await rig.settled(calls: 1))
        #expect(await rig.planned(.retry, in: .seconds(30) + .milliseconds(500)))
        rig.connectivity.set(false)
        #expect(await until { await !rig.scheduler.isOnline })
        rig.connectivity.set(true)
        #expect(await until { await rig.scheduler.isOnline })
        #expect(await rig.planned(.retry, in: .seconds(30) + .milliseconds(500)))
        rig.clock.advance(by: .seconds(30))
        #expect(await rig.planned(.retry, in: .milliseconds(500)), "still waiting out the Retry-After")
        #expect(rig.sync.calls == 1)
        rig.clock.advance(by: .milliseconds(500))
        #expect(await rig.settled(calls: 2))
        #expect(await rig.planned(.retry, in: .seconds(7) + .seconds(1)), "the second failure: 7 s, then half of a 2 s ceiling")
    }

    @Test("a success resets the backoff: the next failure pauses as the first did")
    func successResetsBackoff() async throws {
        let rig = ScheduleRig()
        rig.sync.answer(.failure(offline), .failure(offline), .failure(offline), .success(SyncReport()), .failure(offline))
        await rig.scheduler.start()
        defer { Task { await rig.scheduler.stop() } }
        for (calls, pause) in [(1, 1), (2, 2), (3, 4)] {
            #expect(await rig.settled(calls: calls))
            #expect(await rig.planned(.retry, in: .seconds(pause)))
            try await rig.advanceToNextAttempt()
        }
        #expect(await rig.settled(calls: 4))
        #expect(await rig.scheduler.consecutiveFailures == 0)
        #expect(await rig.scheduler.nextAttempt == nil)
        rig.scheduler.localEdit()
        #expect(await rig.planned(.edits, in: .seconds(2)))
        try await rig.advanceToNextAttempt()
        #expect(await rig.settled(calls: 5))
        #expect(await rig.planned(.retry, in: .seconds(1)), "back to the first ceiling")
    }

    @Test("offline, nothing is tried; connectivity coming back syncs at once, cutting a backoff short")
    func connectivityReturnTriggers() async throws {
        let rig = ScheduleRig(online: false)
        await rig.scheduler.start()
        defer { Task { await rig.scheduler.stop() } }
        rig.scheduler.localEdit()
        #expect(await rig.planned(.edits, in: .seconds(2)))
        rig.clock.advance(by: .seconds(2))
        #expect(await until { await rig.scheduler.nextAttempt == nil })
        #expect(rig.sync.calls == 0, "no attempt while offline")
        rig.connectivity.set(true)
        #expect(await rig.settled(calls: 1), "back online: a sync at once")

        rig.sync.answer(.failure(offline))
        rig.scheduler.localEdit()
        #expect(await rig.planned(.edits, in: .seconds(2)))
        try await rig.advanceToNextAttempt()
        #expect(await rig.settled(calls: 2))
        rig.sync.answer(.failure(offline))
        #expect(await rig.planned(.retry, in: .seconds(1)))
        try await rig.advanceToNextAttempt()
        #expect(await rig.settled(calls: 3))
        #expect(await rig.planned(.retry, in: .seconds(2)))
        rig.connectivity.set(false)
        rig.connectivity.set(true)
        #expect(await rig.settled(calls: 4), "the network came back: no waiting out the backoff")
        #expect(await rig.scheduler.consecutiveFailures == 0)
    }

    @Test("the timer syncs only in the foreground, and coming to the foreground catches up at once")
    func foregroundTimer() async throws {
        let rig = ScheduleRig(appState: .background)
        await rig.scheduler.start()
        defer { Task { await rig.scheduler.stop() } }
        #expect(await rig.settled(calls: 1))
        #expect(await rig.scheduler.nextAttempt == nil)
        rig.clock.advance(by: .seconds(600))
        #expect(rig.sync.calls == 1)

        rig.scheduler.setAppState(.foreground)
        #expect(await rig.settled(calls: 2), "catch-up sync on entering the foreground")
        #expect(await rig.planned(.timer, in: .seconds(60)))
        for calls in 3...5 {
            try await rig.advanceToNextAttempt()
            #expect(await rig.settled(calls: calls))
            #expect(await rig.planned(.timer, in: .seconds(60)))
        }
        rig.scheduler.setAppState(.background)
        #expect(await until { await rig.scheduler.nextAttempt == nil })
        #expect(await until { rig.clock.sleepers == 0 })
        rig.clock.advance(by: .seconds(3600))
        #expect(rig.sync.calls == 5)
        #expect(await rig.scheduler.nextAttempt == nil)

        rig.scheduler.setAppState(.foreground)
        rig.connectivity.set(false)
        #expect(await rig.settled(calls: 6))
        #expect(await until { await rig.scheduler.nextAttempt == nil }, "offline: no timer")
    }

    @Test("never two syncs at once: triggers during a sync make one more sync after it, which the refresh gets")
    func noOverlap() async throws {
        let rig = ScheduleRig(appState: .foreground)
        rig.sync.hold()
        await rig.scheduler.start()
        defer { Task { await rig.scheduler.stop() } }
        #expect(await until { rig.sync.running == 1 })
        rig.scheduler.localEdit()
        #expect(await rig.planned(.edits, in: .seconds(2)))
        rig.clock.advance(by: .seconds(2))
        rig.connectivity.set(false)
        rig.connectivity.set(true)
        let scheduler = rig.scheduler
        let refresh = Task { try await scheduler.refresh() }
        rig.scheduler.setAppState(.background)
        rig.scheduler.setAppState(.foreground)
        #expect(await until { rig.clock.sleepers == 0 })
        #expect(rig.sync.calls == 1)
        rig.sync.answer(
            .success(SyncReport()),
            .success(
                {
                    var report = SyncReport(); report.pulled = 7; return report
                }()))
        rig.sync.release()
        let report = try await refresh.value
        #expect(report.pulled == 7, "the refresh got the sync that began after it was asked")
        #expect(await rig.settled(calls: 2))
        #expect(await rig.planned(.timer, in: .seconds(60)))
        #expect(rig.sync.calls == 2, "everything asked during the first sync was one more sync")
        #expect(rig.sync.mostAtOnce == 1)
    }

    @Test("refresh() syncs at once whatever the backoff and connectivity say, and throws the sync's failure")
    func refreshOnDemand() async throws {
        let rig = ScheduleRig(online: false)
        await rig.scheduler.start()
        defer { Task { await rig.scheduler.stop() } }
        rig.sync.answer(.failure(offline))
        await #expect(throws: offline) { try await rig.scheduler.refresh() }
        #expect(await rig.settled(calls: 1))
        #expect(await rig.planned(.retry, in: .seconds(1)))
        var report = SyncReport()
        report.pushed = 3
        rig.sync.answer(.success(report))
        #expect(try await rig.scheduler.refresh() == report)
        #expect(rig.sync.calls == 2)
        #expect(await rig.scheduler.nextAttempt == nil, "a success ends the backoff")
    }

    @Test("stop() cancels the running sync, every planned one, and a waiting refresh")
    func stopCancelsEverything() async throws {
        let rig = ScheduleRig(appState: .foreground)
        rig.sync.hold()
        await rig.scheduler.start()
        #expect(await until { rig.sync.running == 1 })
        rig.scheduler.localEdit()
        #expect(await rig.planned(.edits, in: .seconds(2)))
        let scheduler = rig.scheduler
        let refresh = Task { try await scheduler.refresh() }
        await rig.scheduler.stop()
        rig.sync.release()
        await #expect(throws: LocifyError.cancelled) { try await refresh.value }
        #expect(await until { rig.sync.running == 0 && rig.sync.cancelled == 1 }, "the running sync saw its cancellation")
        #expect(await until { rig.clock.sleepers == 0 }, "no timer left")
        #expect(await rig.scheduler.nextAttempt == nil)
        #expect(await !rig.scheduler.isSyncing, "a stopped scheduler is not syncing")
        rig.scheduler.localEdit()
        rig.connectivity.set(false)
        rig.connectivity.set(true)
        rig.clock.advance(by: .seconds(3600))
        await #expect(throws: LocifyError.cancelled) { try await rig.scheduler.refresh() }
        #expect(rig.sync.calls == 1)
    }

    @Test("with live mode in the foreground: live runs there instead of the timer and the debounce, and stops in the background and offline")
    func liveInForeground() async throws {
        let lives = Mutex((started: 0, running: 0))
        let rig = ScheduleRig(
            appState: .foreground,
            live: { _ in
                lives.withLock {
                    $0.started += 1
                    $0.running += 1
                }
                while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
                lives.withLock { $0.running -= 1 }
            },
            configure: { $0.liveInForeground = LiveSyncSettings() })
        await rig.scheduler.start()
        defer { Task { await rig.scheduler.stop() } }
        #expect(await until { lives.withLock { $0 == (1, 1) } })
        #expect(rig.sync.calls == 0, "live mode makes its own first sync")
        rig.scheduler.localEdit()
        #expect(await rig.scheduler.nextAttempt == nil, "live mode pushes edits itself")
        rig.scheduler.setAppState(.background)
        #expect(await until { lives.withLock { $0 == (1, 0) } })
        rig.scheduler.setAppState(.foreground)
        #expect(await until { lives.withLock { $0 == (2, 1) } })
        rig.connectivity.set(false)
        #expect(await until { lives.withLock { $0 == (2, 0) } })
        rig.connectivity.set(true)
        #expect(await until { lives.withLock { $0 == (3, 1) } })
        #expect(try await rig.scheduler.refresh() == SyncReport(), "pull-to-refresh still syncs")
        await rig.scheduler.stop()
        #expect(await until { lives.withLock { $0 == (3, 0) } })
        #expect(rig.clock.sleepers == 0)
    }
}

/// How many requests asked for a token.
private final class Entered: Sendable {
    private let count = Atomic<Int>(0)
    func add() { count.add(1, ordering: .relaxed) }
    var value: Int { count.load(ordering: .relaxed) }
}

/// An engine whose every request waits for its token until cancelled (a sync that never ends by itself).
private func engineWithHangingRequests(_ entered: Entered) -> SyncEngine {
    // safe because: the literal is a valid URL
    let api = LocifyAPIClient(baseURL: URL(string: "http://127.0.0.1:9")!) { _ in
        entered.add()
        try await Task.sleep(for: .seconds(3600))
        return "never"
    }
    return SyncEngine(api: api, store: InMemoryStore())
}

@Suite("SyncEngine: start(), stop() and the background-task helper")
struct SyncEngineScheduleTests {
    @Test("stop() cancels the sync start() began, and the engine then syncs by hand again")
    func stopCancelsTheEnginesSync() async throws {
        let entered = Entered()
        let engine = engineWithHangingRequests(entered)
        let scheduler = await engine.start()
        #expect(await until { await scheduler.isSyncing })
        #expect(await until { entered.value == 1 })
        await engine.stop()
        await #expect(throws: LocifyError.cancelled) { try await scheduler.refresh() }
        // The cancelled sync gave its turn back: a sync by hand runs (and is cancelled in turn).
        let byHand = Task { try await engine.sync() }
        #expect(await until { entered.value == 2 })
        byHand.cancel()
        await #expect(throws: LocifyError.self) { try await byHand.value }
    }

    @Test("start() again replaces the running schedule: the first one stops")
    func startAgainReplaces() async throws {
        let entered = Entered()
        let engine = engineWithHangingRequests(entered)
        let first = await engine.start()
        let second = await engine.start()
        await #expect(throws: LocifyError.cancelled) { try await first.refresh() }
        #expect(await until { await second.isSyncing })
        await engine.stop()
        await #expect(throws: LocifyError.cancelled) { try await second.refresh() }
    }

    @Test("syncInBackground runs one sync and cancels it when the task expires")
    func backgroundTaskExpiration() async throws {
        let entered = Entered()
        let engine = engineWithHangingRequests(entered)
        let expire = Mutex<(@Sendable () -> Void)?>(nil)
        let run = Task { await engine.syncInBackground { handler in expire.withLock { $0 = handler } } }
        #expect(await until { entered.value == 1 })
        let handler = try #require(expire.withLock { $0 })
        handler()
        #expect(await run.value == false, "expired: not a success")
        #expect(try await engine.pendingChanges().isEmpty)
    }
}
