import Glibc

/// Threads of the server's own (pthreads, never Dispatch's pool), optionally named for `top -H`
/// and debuggers, and a blocking sleep for them. Plain pthreads, so that no target needs
/// Foundation's `Thread` (and the whole of Foundation with it).
public enum DedicatedThread {
    /// Runs `body` on a new detached thread called `name` (Linux keeps at most 15 characters;
    /// nil keeps the creator's name) with a stack of `stackSize` bytes (nil: the system default).
    /// Throws when the kernel has no thread to give (EAGAIN, ENOMEM): a caller serving a request
    /// answers with an error; one starting the server cannot go on without its thread.
    public static func start(
        name: String? = nil, stackSize: Int? = nil, _ body: @escaping @Sendable () -> Void
    ) throws(ThreadStartError) {
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
            throw ThreadStartError(code: result)
        }
    }

    /// `start`, for the threads a process cannot run without (the server's loops and workers, its
    /// background tasks): when there is none to give, the process stops with the reason.
    public static func startOrStop(name: String? = nil, stackSize: Int? = nil, _ body: @escaping @Sendable () -> Void) {
        do throws(ThreadStartError) {
            try start(name: name, stackSize: stackSize, body)
        } catch {
            fatalError("\(name ?? "thread"): \(error)")
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

/// `pthread_create` refused a new thread; `code` is its error number (EAGAIN, ENOMEM, ...).
public struct ThreadStartError: Error, Sendable, CustomStringConvertible {
    /// The error number `pthread_create` returned.
    public let code: Int32

    /// The refusal with error number `code`.
    public init(code: Int32) {
        self.code = code
    }

    /// The error number's text, for logs.
    public var description: String { "cannot start a thread: \(String(cString: strerror(code)))" }
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
