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

    init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
