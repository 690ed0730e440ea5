import Foundation
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
    }

    private let name: String
    private let interval: Duration
    private let work: @Sendable () -> Void
    private let state = Mutex(State())
    private let condition = NSCondition()
    private let finished = DispatchSemaphore(value: 0)

    init(name: String, interval: Duration, work: @escaping @Sendable () -> Void) {
        self.name = name
        self.interval = interval
        self.work = work
    }

    func start() {
        let first = state.withLock { state in
            defer { state.started = true }
            return !state.started
        }
        guard first else { return }
        let thread = Thread { [self] in run() }
        thread.name = name
        thread.start()
    }

    /// Runs the work again as soon as the current run (if any) finishes.
    func wake() {
        condition.lock()
        state.withLock { $0.woken = true }
        condition.signal()
        condition.unlock()
    }

    /// Stops after the current run; returns when the thread has finished.
    func stop() {
        condition.lock()
        let mustWait = state.withLock { state in
            defer { state.stopped = true }
            return state.started && !state.stopped
        }
        condition.signal()
        condition.unlock()
        if mustWait { finished.wait() }
    }

    private func run() {
        defer { finished.signal() }
        while true {
            if state.withLock({ $0.stopped }) { return }
            work()
            condition.lock()
            let deadline = Date().addingTimeInterval(interval.seconds)
            while !state.withLock({ $0.stopped || $0.woken }) {
                if !condition.wait(until: deadline) { break }
            }
            state.withLock { $0.woken = false }
            condition.unlock()
        }
    }
}
