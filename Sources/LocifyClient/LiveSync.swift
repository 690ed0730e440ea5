import Foundation

/// How ``SyncEngine/runLive(_:)`` keeps a device up to date: how long each long-poll waits, how
/// often it polls a server that does not hold pulls, and how it backs off after a failure.
public struct LiveSyncSettings: Sendable {
    /// The longest wait asked of the server per long-poll (default 25 s). The server's
    /// `max_wait_seconds` lowers it, and so does the API client's time-out (the wait ends at
    /// least 5 s before it).
    public var longestWait: Duration = .seconds(25)
    /// The pause between two syncs when the server does not hold pulls (`max_wait_seconds` 0, or
    /// a time-out too short to wait): default 15 s.
    public var pollInterval: Duration = .seconds(15)
    /// The ceiling of the pause after a first failure (default 0.5 s); it doubles with each further
    /// failure in a row, up to ``maximumBackoff``, and the pause is drawn below it (full jitter).
    public var initialBackoff: Duration = .milliseconds(500)
    /// The highest ceiling of a pause (default 60 s).
    public var maximumBackoff: Duration = .seconds(60)
    /// How live mode pauses; it throws when the task is cancelled (tests inject one that records
    /// the pauses instead of sleeping).
    public var sleep: @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    /// A random fraction in 0...1 for the jitter (tests inject a fixed one).
    public var random: @Sendable () -> Double = { Double.random(in: 0...1) }

    /// The default settings.
    public init() {}
}

/// Exponential backoff with full jitter (the AWS rule): after the n-th failure in a row, a pause
/// drawn in [0, min(maximum, initial x 2^(n-1))], after the server's `Retry-After` when it sent one
/// (S001, S003), so that devices refused at once come back spread out, never before they were told.
struct LiveBackoff {
    private(set) var failures = 0

    mutating func reset() { failures = 0 }

    mutating func pause(retryAfter: Int?, _ settings: LiveSyncSettings) -> Duration {
        pause(retryAfter: retryAfter, initial: settings.initialBackoff, maximum: settings.maximumBackoff, random: settings.random)
    }

    /// The pause after one more failure, with a first ceiling `initial` doubling up to `maximum`.
    mutating func pause(retryAfter: Int?, initial: Duration, maximum: Duration, random: () -> Double) -> Duration {
        failures += 1
        let doublings = Double(min(failures - 1, 30))
        let ceiling = min(maximum, initial * pow(2, doublings))
        let jitter = ceiling * min(max(random(), 0), 1)
        return .seconds(retryAfter ?? 0) + jitter
    }
}

extension LocifyError {
    /// The `Retry-After` of an S001 or S003 answer (1 s when the header was missing).
    var retryAfterSeconds: Int? {
        switch self {
        case .rateLimited(_, let seconds), .unavailable(_, let seconds): return max(seconds ?? 1, 0)
        default: return nil
        }
    }
}

/// What live mode keeps in its engine: whether it runs (one at a time), the signal of local edits,
/// and a count of the sync turns taken, which tells whether a long-poll's answer is still the next
/// page of the copy when it arrives.
struct LiveModeState {
    var isRunning = false
    var waiters: [CheckedContinuation<Void, Never>] = []
    var editSignal: AsyncStream<Void>.Continuation?
    var turns: UInt64 = 0
    /// The running live mode's work, which ``SyncEngine/signOut(discardingUnsyncedChanges:)`` cancels.
    var work: Task<Void, Never>?
}

extension SyncEngine {
    /// Starts live mode (``runLive(_:)``) in a new task and returns it: cancel the task to stop
    /// (when the app leaves the foreground, or signs out).
    @discardableResult
    public nonisolated func live(_ settings: LiveSyncSettings = LiveSyncSettings()) -> Task<Void, Never> {
        Task { await self.runLive(settings) }
    }

    /// Keeps the local copy live until the calling task is cancelled: a ``sync()`` first, then one
    /// long-poll pull open at a time (`wait` up to the server's `max_wait_seconds`), whose answer is
    /// applied through the normal pull path as soon as it arrives, and every local edit pushed as
    /// it is made (a ``sync()`` of its own, without waiting for the open pull). Syncs never overlap:
    /// the long-poll's answer, the pushes and the app's own ``sync()`` calls take turns. A failure
    /// (offline, server restarting, 429/503) pauses with exponential backoff and full jitter,
    /// never less than the server's `Retry-After` (``SyncEvent/liveRetrying(_:after:)``), then
    /// resumes from the stored cursor, so nothing committed meanwhile is missed; an expired cursor
    /// (E009) rebuilds the copy as ``sync()`` does. A server without long-poll is polled every
    /// ``LiveSyncSettings/pollInterval``. Cancelling ends the open request at once. It also ends
    /// when the token belongs to another user than the store (``LocifyError/wrongAccount(storeUser:tokenUser:)``).
    /// One live mode runs per engine: a second call waits for the first to end.
    public func runLive(_ settings: LiveSyncSettings = LiveSyncSettings()) async {
        guard await acquireLiveTurn() else { return }
        let (edits, signal) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        live.editSignal = signal
        defer {
            signal.finish()
            live.editSignal = nil
            releaseLiveTurn()
        }
        // A task of its own, so that sign-out can end it whoever started it.
        let work = Task {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.pushEdits(edits, settings) }
                group.addTask { await self.followFeed(settings) }
                // Either ends only when cancelled or for another account: then both end.
                _ = await group.next()
                group.cancelAll()
            }
        }
        live.work = work
        defer { live.work = nil }
        await withTaskCancellationHandler {
            await work.value
        } onCancel: {
            work.cancel()
        }
    }

    /// Pushes (with a ``sync()``) each time local edits were made, and again after a pause while
    /// the last attempt failed.
    private func pushEdits(_ edits: AsyncStream<Void>, _ settings: LiveSyncSettings) async {
        var backoff = LiveBackoff()
        var iterator = edits.makeAsyncIterator()
        while !Task.isCancelled {
            if backoff.failures == 0, await iterator.next() == nil { return }
            do {
                try await sync()
                backoff.reset()
            } catch {
                guard await pause(after: error, &backoff, settings) else { return }
            }
        }
    }

    /// Keeps one long-poll open from the stored cursor and applies each answer; syncs first, and
    /// again after a resync is needed or, without long-poll, every poll interval.
    private func followFeed(_ settings: LiveSyncSettings) async {
        var backoff = LiveBackoff()
        var caughtUp = false
        while !Task.isCancelled {
            do {
                if !caughtUp {
                    try await sync()
                    caughtUp = true
                    backoff.reset()
                }
                let wait = try await longPollWait(settings)
                let stored = try loaded().metadata
                guard wait > 0, let cursor = stored.cursor, let user = stored.userID else {
                    if wait == 0 { try await settings.sleep(settings.pollInterval) }
                    caughtUp = false
                    continue
                }
                let asked = (turns: live.turns, duringSync: isSyncing)
                let sent = ContinuousClock.now, sentAt = clock()
                var page = try await api.pull(since: cursor, limit: min(pullLimit, info?.maxPullLimit ?? pullLimit), wait: wait, asUser: user)
                page.timeSample = ServerTimeSample(page.serverTime, sent: sentAt, received: clock())
                try await applyLongPoll(page, since: cursor, user: user, askedAt: asked)
                if page.changes.isEmpty && !page.hasMore && ContinuousClock.now - sent < Self.earlyAnswer {
                    // Nothing, at once: the instance is shutting down, or something between does not
                    // hold pulls. The next one waits a pause, as after a failure, never hammering it.
                    try await settings.sleep(backoff.pause(retryAfter: nil, settings))
                } else {
                    backoff.reset()
                }
            } catch {
                if let failure = error as? LocifyError, failure.code == "E009" || failure.code == "E001" {
                    caughtUp = false  // the next sync rebuilds the copy from a snapshot, as sync() does
                }
                guard await pause(after: error, &backoff, settings) else { return }
            }
        }
    }

    /// An empty long-poll answer sooner than this was not held.
    private static let earlyAnswer: Duration = .seconds(1)

    /// The wait of the next long-poll, in whole seconds: the settings', lowered to the server's
    /// longest and to 5 s less than the API client's time-out; 0 means poll.
    private func longPollWait(_ settings: LiveSyncSettings) async throws -> Int {
        let info = try await serverInfo()
        let wanted = Int(settings.longestWait.components.seconds)
        let transport = Int((api.timeout - LocifyAPIClient.waitMargin).rounded(.down))
        return max(0, min(info.maxWaitSeconds, wanted, transport))
    }

    /// Applies a long-poll's answer in a sync turn, as the first page of the normal pull path
    /// (which follows `has_more` to the end). The answer is the next page of the copy only when no
    /// other turn began or was under way since it was asked for and the stored cursor is still the
    /// one it was asked with: a sync meanwhile moved the cursor, and a push may have stored newer
    /// records than the page holds. Otherwise it is dropped; the next long-poll, from the stored
    /// cursor, answers at once with whatever follows it.
    private func applyLongPoll(
        _ page: FeedPage, since cursor: String, user: String, askedAt asked: (turns: UInt64, duringSync: Bool)
    ) async throws {
        await acquireSyncTurn()
        defer { releaseSyncTurn() }
        let stored = try loaded().metadata
        let isNext = !asked.duringSync && live.turns == asked.turns &+ 1 && stored.cursor == cursor && stored.userID == user
        guard isNext else { return }
        var report = SyncReport()
        try await pullAll(user: user, report: &report, answered: page)
    }

    /// After a failure: whether live mode goes on (not cancelled, same account), after a pause.
    /// Only the cancellation of live mode's own task ends it: a ``LocifyError/cancelled`` that
    /// reaches it otherwise is retried as any failure is.
    private func pause(after error: any Error, _ backoff: inout LiveBackoff, _ settings: LiveSyncSettings) async -> Bool {
        let failure = Self.locifyError(error)
        // A CancellationError as such comes from the settings' sleep: live mode's task was cancelled.
        if Task.isCancelled || error is CancellationError { return false }
        if case .wrongAccount = failure {
            emit(.failed(failure))
            return false
        }
        let pause = backoff.pause(retryAfter: failure.retryAfterSeconds, settings)
        emit(.liveRetrying(failure, after: pause))
        do {
            try await settings.sleep(pause)
        } catch {
            return false
        }
        return !Task.isCancelled
    }

    private func acquireLiveTurn() async -> Bool {
        while live.isRunning {
            await withCheckedContinuation { live.waiters.append($0) }
        }
        if Task.isCancelled {
            wakeNextLiveWaiter()
            return false
        }
        live.isRunning = true
        return true
    }

    private func releaseLiveTurn() {
        live.isRunning = false
        wakeNextLiveWaiter()
    }

    private func wakeNextLiveWaiter() {
        if !live.waiters.isEmpty { live.waiters.removeFirst().resume() }
    }
}
