import Glibc

/// A value behind a pthread mutex, for the queues that hand connections between the event loops
/// and the workers. Unlike `Synchronization.Mutex` (atomics and futex calls ThreadSanitizer does
/// not see), a pthread mutex is visible to ThreadSanitizer, so the happens-before edge of each
/// hand-off is too, and the sanitizer run checks the loop/worker confinement instead of reporting
/// every hand-off as a race.
final class HandoffLock<Value>: @unchecked Sendable {
    // safe because: `value` is only touched inside `withLock`, under `mutex`.
    private var value: Value
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    /// Every pthread call's result is checked, as swift-nio's lock does: a failure (EAGAIN or
    /// ENOMEM at creation, EINVAL or EDEADLK from a misuse) leaves no safe way to go on, so it
    /// stops the process with the call and the error number rather than running unlocked.
    init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        let result = pthread_mutex_init(mutex, nil)
        precondition(result == 0, "pthread_mutex_init failed: error \(result)")
    }

    deinit {
        let result = pthread_mutex_destroy(mutex)
        precondition(result == 0, "pthread_mutex_destroy failed: error \(result)")
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        let locked = pthread_mutex_lock(mutex)
        precondition(locked == 0, "pthread_mutex_lock failed: error \(locked)")
        defer {
            let unlocked = pthread_mutex_unlock(mutex)
            precondition(unlocked == 0, "pthread_mutex_unlock failed: error \(unlocked)")
        }
        return try body(&value)
    }
}
