import Dispatch
import Primitives
import Synchronization

/// The one dedicated thread of a background component (the listener, the notifier): started at
/// most once, stopped at most once, and `stop` returns only when the thread's body has.
final class BackgroundThread: Sendable {
    private struct Phase {
        var started = false
        var stopping = false
    }

    private let name: String
    private let phase = Mutex(Phase())
    private let finished = DispatchSemaphore(value: 0)

    init(name: String) {
        self.name = name
    }

    /// Whether `stop` was called: the body returns as soon as it sees it.
    var isStopping: Bool { phase.withLock { $0.stopping } }

    /// Runs `body` on a new thread, unless started or stopped before.
    func start(_ body: @escaping @Sendable () -> Void) {
        let first = phase.withLock { phase -> Bool in
            defer { phase.started = true }
            return !phase.started && !phase.stopping
        }
        guard first else { return }
        DedicatedThread.startOrStop(name: name, stackSize: 1 << 20) { [finished] in
            body()
            finished.signal()
        }
    }

    /// Marks the thread stopping, calls `wake` (so that a body waiting for work sees it) and waits
    /// for the body to return. Safe to call more than once, and before `start`.
    func stop(wake: () -> Void) {
        let running = phase.withLock { phase -> Bool in
            defer { phase.stopping = true }
            return phase.started && !phase.stopping
        }
        guard running else { return }
        wake()
        finished.wait()
    }
}
