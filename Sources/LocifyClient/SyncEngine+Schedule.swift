import Foundation

#if os(iOS)
import BackgroundTasks
#endif

extension SyncEngine {
    /// Starts syncing by itself (a ``SyncScheduler``): at once, after local edits (debounced), on a
    /// timer while ``AppState/foreground`` (or in live mode, ``SyncSchedule/liveInForeground``),
    /// when connectivity returns, and on ``refresh()``; after failures with exponential backoff and
    /// jitter, never sooner than the server's `Retry-After`. Its syncs and the app's own ``sync()``
    /// calls take turns, never two at once. Starting again replaces the running schedule.
    /// - Returns: the scheduler, to read its state (``SyncScheduler/nextAttempt``, the last result).
    @discardableResult
    public func start(_ schedule: SyncSchedule = SyncSchedule()) async -> SyncScheduler {
        // The scheduler's states reach the status in order, through a stream of their own.
        let (states, stateChanged) = AsyncStream<ScheduleState>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let scheduler = SyncScheduler(
            schedule,
            operations: SyncScheduler.Operations(
                sync: { [weak self] in
                    guard let self else { throw LocifyError.cancelled }
                    return try await self.sync()
                },
                live: { [weak self] settings in await self?.runLive(settings) },
                stateChanged: { stateChanged.yield($0) }))
        scheduleWatch?.cancel()
        scheduleWatch = Task { [weak self, weak scheduler] in
            for await state in states {
                guard let scheduler else { return }
                await self?.scheduleChanged(state, of: scheduler)
            }
        }
        // Swapped before any suspension, so that two calls at once leave one schedule running.
        let previous = self.scheduler
        self.scheduler = scheduler
        watchConnectivity(schedule.connectivity)
        await previous?.stop()
        await scheduler.start()
        return scheduler
    }

    /// Stops the schedule ``start(_:)`` began: nothing planned runs, a running sync is cancelled,
    /// live mode ends. ``signOut(discardingUnsyncedChanges:)`` calls it.
    public func stop() async {
        guard let scheduler else { return }
        self.scheduler = nil
        watchConnectivity(nil)
        scheduleWatch?.cancel()
        scheduleWatch = nil
        await scheduler.stop()
        updateStatus { $0.schedule = nil }
    }

    /// Shows `scheduler`'s state in the status, while it is the engine's schedule.
    private func scheduleChanged(_ state: ScheduleState, of scheduler: SyncScheduler) {
        guard self.scheduler === scheduler else { return }
        updateStatus { $0.schedule = state }
    }

    /// Shows the connectivity's readings in the status (``SyncStatus/Activity/offline``).
    private func watchConnectivity(_ connectivity: (any Connectivity)?) {
        connectivityWatch?.cancel()
        connectivityWatch = connectivity.map { connectivity in
            let updates = connectivity.updates()
            return Task { [weak self] in
                for await online in updates { await self?.connectivityChanged(online: online) }
            }
        }
    }

    /// Tells the schedule whether the app is in the foreground (SwiftUI: from `scenePhase`).
    public func setAppState(_ state: AppState) {
        scheduler?.setAppState(state)
    }

    /// Syncs now and returns the report (pull-to-refresh), through the schedule when it runs (a
    /// sync under way is followed by a fresh one), else as ``sync()``.
    @discardableResult
    public func refresh() async throws -> SyncReport {
        if let scheduler { return try await scheduler.refresh() }
        return try await sync()
    }

    /// One sync that ends when `expiration` fires (a background task's expiration handler):
    /// whether it succeeded, for the task's completion. `expiration` is given the handler to
    /// install. ``handle(_:)`` wraps it for `BGAppRefreshTask`.
    public nonisolated func syncInBackground(expiration: (@escaping @Sendable () -> Void) -> Void) async -> Bool {
        let work = Task { try await self.sync() }
        expiration { work.cancel() }
        do {
            _ = try await work.value
            return true
        } catch {
            return false
        }
    }

    #if os(iOS)
    /// Runs one sync for a `BGAppRefreshTask` (registered with `BGTaskScheduler`), cancelled
    /// when the task expires, and completes the task with its success.
    public nonisolated func handle(_ task: BGAppRefreshTask) {
        nonisolated(unsafe) let task = task
        Task {
            let succeeded = await syncInBackground { cancel in task.expirationHandler = cancel }
            task.setTaskCompleted(success: succeeded)
        }
    }
    #endif
}
