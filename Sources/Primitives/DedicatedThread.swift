import Glibc

/// Threads of the server's own (pthreads, never Dispatch's pool), optionally named for `top -H`
/// and debuggers, and a blocking sleep for them. Plain pthreads, so that no target needs
/// Foundation's `Thread` (and the whole of Foundation with it).
public enum DedicatedThread {
    /// Runs `body` on a new detached thread called `name` (Linux keeps at most 15 characters;
    /// nil keeps the creator's name) with a stack of `stackSize` bytes (nil: the system default).
    /// A thread that cannot be created (EAGAIN, ENOMEM) stops the process: the callers count on
    /// their thread running (a server without its loops, a wait that never ends), so there is no
    /// safe way to go on without it.
    public static func start(name: String? = nil, stackSize: Int? = nil, _ body: @escaping @Sendable () -> Void) {
        var attributes = pthread_attr_t()
        var result = pthread_attr_init(&attributes)
        precondition(result == 0, "pthread_attr_init failed: error \(result)")
        defer { pthread_attr_destroy(&attributes) }
        result = pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        precondition(result == 0, "pthread_attr_setdetachstate failed: error \(result)")
        if let stackSize {
            result = pthread_attr_setstacksize(&attributes, stackSize)
            precondition(result == 0, "pthread_attr_setstacksize(\(stackSize)) failed: error \(result)")
        }
        let context = Unmanaged.passRetained(ThreadStart(name: name, body: body)).toOpaque()
        var thread = pthread_t()
        result = pthread_create(
            &thread, &attributes,
            { context in
                guard let context else { return nil }
                let start = Unmanaged<ThreadStart>.fromOpaque(context).takeRetainedValue()
                if let name = start.name { DedicatedThread.nameCurrentThread(name) }
                start.body()
                return nil
            }, context)
        if result != 0 {
            Unmanaged<ThreadStart>.fromOpaque(context).release()
            preconditionFailure("pthread_create failed: error \(result)")
        }
    }

    /// Blocks the calling thread for `duration` (not at all for a duration not above zero); a
    /// signal does not cut the sleep short.
    public static func sleep(for duration: Duration) {
        guard duration > .zero else { return }
        let (seconds, attoseconds) = duration.components
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) == -1 && errno == EINTR {
            request = remaining
        }
    }

    /// Sets the kernel's name of the calling thread (a new thread inherits its creator's name).
    fileprivate static func nameCurrentThread(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }
}

/// What a new thread runs, handed through `pthread_create`'s context pointer.
private final class ThreadStart {
    let name: String?
    let body: @Sendable () -> Void

    init(name: String?, body: @escaping @Sendable () -> Void) {
        self.name = name
        self.body = body
    }
}
