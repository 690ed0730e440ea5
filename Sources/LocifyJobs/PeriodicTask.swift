import Dispatch
import Primitives
import Synchronization

/// Runs a piece of background work on its own thread every `interval`, until stopped; `wake()`
/// runs it early. Used for the clean-up worker and the tombstone purge, which block on the
/// database and Google and so must not run on Dispatch's shared pool.
final class PeriodicTask: Sendable {
    private struct State {
        var started = false
        var stopped = false
        var woken = false
        /// Whether some `stop` has waited for the thread already (the semaphore is signalled once).
        var finished = false
    }

    private let name: String
    private let interval: Duration
    private let clock: MonotonicClock
    private let work: @Sendable () -> Void
    private let state = Mutex(State())
    /// Signalled after `woken` or `stopped` is set, so the sleeping thread looks at them again.
    private let changed = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// A task running `work` every `interval`, measured on `clock`.
    init(name: String, interval: Duration, clock: MonotonicClock = .system, work: @escaping @Sendable () -> Void) {
        self.name = name
        self.interval = interval
        self.clock = clock
        self.work = work
    }

    func start() {
        let first = state.withLock { state in
            defer { state.started = true }
            return !state.started
        }
        guard first else { return }
        DedicatedThread.startOrStop(name: name) { [self] in run() }
    }

    /// Runs the work again as soon as the current run (if any) finishes.
    func wake() {
        state.withLock { $0.woken = true }
        changed.signal()
    }

    /// Starts no further run; returns at once.
    func drain() {
        state.withLock { $0.stopped = true }
        changed.signal()
    }

    /// Stops after the current run; returns when the thread has finished.
    func stop() {
        let mustWait = state.withLock { state in
            defer { (state.stopped, state.finished) = (true, true) }
            return state.started && !state.finished
        }
        changed.signal()
        if mustWait { finished.wait() }
    }

    private func run() {
        defer { finished.signal() }
        while true {
            if state.withLock({ $0.stopped }) { return }
            work()
            // A signal left over from an earlier wake only makes the loop look at the flags again.
            let deadline = clock.now() + interval
            while !state.withLock({ $0.stopped || $0.woken }) {
                let remaining = deadline - clock.now()
                // A semaphore waits until a `DispatchTime`: the remaining time is measured on `clock`.
                guard remaining > .zero, changed.wait(timeout: .now() + .nanoseconds(Int(remaining.nanoseconds))) == .success else { break }
            }
            state.withLock { $0.woken = false }
        }
    }
}
