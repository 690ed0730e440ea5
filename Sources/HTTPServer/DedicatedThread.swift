import Foundation
import Glibc

/// Starts the server's own threads (never Dispatch's pool), named for `top -H` and debuggers.
enum DedicatedThread {
    /// Runs `body` on a new thread called `name` (Linux keeps at most 15 characters).
    static func start(name: String, stackSize: Int = 1 << 20, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread {
            nameCurrentThread(name)
            body()
        }
        thread.stackSize = stackSize
        thread.start()
    }

    /// Sets the kernel's name of the calling thread (a new thread inherits its creator's name,
    /// and Foundation does not reliably rename it on Linux).
    private static func nameCurrentThread(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }
}
