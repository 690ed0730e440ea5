import Dispatch
import Glibc
import Primitives
import Synchronization
import Testing

@Suite("Dedicated threads: pthreads of the server's own, without Foundation")
struct DedicatedThreadTests {
    /// The kernel's name of the calling thread (/proc/thread-self/comm without its line feed).
    static func currentThreadName() -> String {
        let fd = open("/proc/thread-self/comm", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return "" }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        return String(decoding: buffer.prefix(max(0, count)).filter { $0 != 0x0A }, as: UTF8.self)
    }

    @Test("runs the body on a new thread named as asked, cut to Linux's 15 characters")
    func namedThread() throws {
        let seen = Mutex<(name: String, isCaller: Bool)?>(nil)
        let done = DispatchSemaphore(value: 0)
        let caller = pthread_self()
        try DedicatedThread.start(name: "locify.storage-delete", stackSize: 1 << 20) {
            let observed = (name: Self.currentThreadName(), isCaller: pthread_equal(pthread_self(), caller) != 0)
            seen.withLock { $0 = observed }
            done.signal()
        }
        #expect(done.wait(timeout: .now() + .seconds(10)) == .success, "the thread ran")
        let observed = seen.withLock { $0 }
        #expect(observed?.name == "locify.storage-")
        #expect(observed?.isCaller == false)
    }

    @Test("without a name the new thread keeps its creator's")
    func unnamedThread() throws {
        let seen = Mutex<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        let creator = Self.currentThreadName()
        try DedicatedThread.start {
            seen.withLock { $0 = Self.currentThreadName() }
            done.signal()
        }
        #expect(done.wait(timeout: .now() + .seconds(10)) == .success, "the thread ran")
        #expect(seen.withLock { $0 } == creator)
    }

    @Test("sleeps at least the duration asked for, and not at all for zero or less")
    func sleeps() {
        let clock = ContinuousClock()
        let slept = clock.measure { DedicatedThread.sleep(for: .milliseconds(30)) }
        #expect(slept >= .milliseconds(30))
        let skipped = clock.measure {
            DedicatedThread.sleep(for: .zero)
            DedicatedThread.sleep(for: .seconds(-5))
        }
        #expect(skipped < .seconds(5))
    }
}
