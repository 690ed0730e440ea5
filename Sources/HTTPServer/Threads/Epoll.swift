internal import CLinux
import Glibc

/// A thin wrapper over Linux `epoll` and `eventfd`.
///
/// The toolchain's Glibc module does not import `<sys/epoll.h>` or `<sys/eventfd.h>`; the `CLinux`
/// shim does, and touches the (packed on x86_64) `struct epoll_event` only from C.
struct Epoll: ~Copyable {
    /// Readiness bits of `epoll_event.events` (values from `<sys/epoll.h>`).
    struct Events: OptionSet, Sendable {
        let rawValue: UInt32
        static let readable = Events(rawValue: 0x001)  // EPOLLIN
        static let writable = Events(rawValue: 0x004)  // EPOLLOUT
        static let error = Events(rawValue: 0x008)  // EPOLLERR
        static let hangUp = Events(rawValue: 0x010)  // EPOLLHUP
        static let readHangUp = Events(rawValue: 0x2000)  // EPOLLRDHUP
        static let edgeTriggered = Events(rawValue: 1 << 31)  // EPOLLET
    }

    /// Size of `struct epoll_event` (12 bytes, packed, on x86_64; 16 elsewhere).
    static let eventSize = locify_epoll_event_size()

    /// The epoll instance's descriptor.
    let descriptor: Int32

    /// Creates an epoll instance (close-on-exec).
    init() throws(HTTPServerError) {
        let descriptor = locify_epoll_create()
        guard descriptor >= 0 else { throw .systemCall("epoll_create1", errno: errno) }
        self.descriptor = descriptor
    }

    deinit {
        Glibc.close(descriptor)
    }

    /// Registers `fd` for `events`, tagging its events with `token`.
    func add(_ fd: Int32, events: Events, token: UInt64) throws(HTTPServerError) {
        try control(LOCIFY_EPOLL_CTL_ADD, fd, events: events, token: token, name: "epoll_ctl(ADD)")
    }

    /// Changes the events `fd` is registered for.
    func modify(_ fd: Int32, events: Events, token: UInt64) throws(HTTPServerError) {
        try control(LOCIFY_EPOLL_CTL_MOD, fd, events: events, token: token, name: "epoll_ctl(MOD)")
    }

    /// Unregisters `fd` (closing it does that too).
    func remove(_ fd: Int32) {
        _ = locify_epoll_control(descriptor, LOCIFY_EPOLL_CTL_DEL, fd, 0, 0)
    }

    private func control(
        _ operation: Int32, _ fd: Int32, events: Events, token: UInt64, name: String
    ) throws(HTTPServerError) {
        let result = locify_epoll_control(descriptor, operation, fd, events.rawValue, token)
        guard result == 0 else { throw .systemCall(name, errno: errno) }
    }

    /// Waits up to `timeoutMilliseconds` for events, writing them into `buffer` (room for
    /// `buffer.count / eventSize` events). Returns how many arrived (0 on timeout or EINTR).
    func wait(into buffer: UnsafeMutableRawBufferPointer, timeoutMilliseconds: Int32) throws(HTTPServerError) -> Int {
        let result = locify_epoll_wait(
            descriptor, buffer.baseAddress, Int32(buffer.count / Self.eventSize), timeoutMilliseconds)
        if result < 0 {
            if errno == EINTR { return 0 }
            throw .systemCall("epoll_wait", errno: errno)
        }
        return Int(result)
    }

    /// The events and token of event number `index` in a buffer filled by `wait`.
    static func event(at index: Int, in buffer: UnsafeMutableRawBufferPointer) -> (events: Events, token: UInt64) {
        var events: UInt32 = 0
        var token: UInt64 = 0
        locify_epoll_event_at(buffer.baseAddress, Int32(index), &events, &token)
        return (Events(rawValue: events), token)
    }

    /// Creates a non-blocking, close-on-exec eventfd (a wake-up counter).
    static func makeEventFD() throws(HTTPServerError) -> Int32 {
        let descriptor = locify_eventfd()
        guard descriptor >= 0 else { throw .systemCall("eventfd", errno: errno) }
        return descriptor
    }
}
