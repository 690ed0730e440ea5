import Glibc

/// A thin wrapper over Linux `epoll` and `eventfd`.
///
/// The toolchain's Glibc module does not import `<sys/epoll.h>` or `<sys/eventfd.h>`, so the four
/// functions are looked up once with `dlsym` in the C library already loaded into the process and
/// called through `@convention(c)` pointers (the C ABI, exactly as a header would declare them).
/// `struct epoll_event` is declared packed on x86_64 (12 bytes) and naturally aligned elsewhere
/// (16 bytes); events are read and written as raw bytes with that layout.
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

    private typealias CreateFunction = @convention(c) (Int32) -> Int32
    private typealias ControlFunction = @convention(c) (Int32, Int32, Int32, UnsafeMutableRawPointer?) -> Int32
    private typealias WaitFunction = @convention(c) (Int32, UnsafeMutableRawPointer?, Int32, Int32) -> Int32
    private typealias EventFDFunction = @convention(c) (UInt32, Int32) -> Int32

    private struct Functions: Sendable {
        let create: CreateFunction
        let control: ControlFunction
        let wait: WaitFunction
        let eventFD: EventFDFunction
    }

    private static let functions: Functions? = {
        guard let library = dlopen(nil, RTLD_NOW),
            let create = dlsym(library, "epoll_create1"),
            let control = dlsym(library, "epoll_ctl"),
            let wait = dlsym(library, "epoll_wait"),
            let eventFD = dlsym(library, "eventfd")
        else { return nil }
        // safe because these are the C library's own symbols and the types below are exactly
        // their C prototypes from <sys/epoll.h> and <sys/eventfd.h>.
        return Functions(
            create: unsafeBitCast(create, to: CreateFunction.self),
            control: unsafeBitCast(control, to: ControlFunction.self),
            wait: unsafeBitCast(wait, to: WaitFunction.self),
            eventFD: unsafeBitCast(eventFD, to: EventFDFunction.self))
    }()

    #if arch(x86_64)
    /// Size of `struct epoll_event` (packed on x86_64).
    static let eventSize = 12
    private static let dataOffset = 4
    #else
    static let eventSize = 16
    private static let dataOffset = 8
    #endif

    private static let controlAdd: Int32 = 1
    private static let controlDelete: Int32 = 2
    private static let controlModify: Int32 = 3

    /// The epoll instance's descriptor.
    let descriptor: Int32
    private let functions: Functions

    /// Creates an epoll instance (close-on-exec).
    init() throws(HTTPServerError) {
        guard let functions = Self.functions else { throw .epollUnavailable }
        let descriptor = functions.create(O_CLOEXEC)
        guard descriptor >= 0 else { throw .systemCall("epoll_create1", errno: errno) }
        self.descriptor = descriptor
        self.functions = functions
    }

    deinit {
        Glibc.close(descriptor)
    }

    /// Registers `fd` for `events`, tagging its events with `token`.
    func add(_ fd: Int32, events: Events, token: UInt64) throws(HTTPServerError) {
        try control(Self.controlAdd, fd, events: events, token: token, name: "epoll_ctl(ADD)")
    }

    /// Changes the events `fd` is registered for.
    func modify(_ fd: Int32, events: Events, token: UInt64) throws(HTTPServerError) {
        try control(Self.controlModify, fd, events: events, token: token, name: "epoll_ctl(MOD)")
    }

    /// Unregisters `fd` (closing it does that too).
    func remove(_ fd: Int32) {
        var event = (UInt64(0), UInt64(0))
        _ = withUnsafeMutableBytes(of: &event) { functions.control(descriptor, Self.controlDelete, fd, $0.baseAddress) }
    }

    private func control(
        _ operation: Int32, _ fd: Int32, events: Events, token: UInt64, name: String
    ) throws(HTTPServerError) {
        var event = (UInt64(0), UInt64(0))
        let result = withUnsafeMutableBytes(of: &event) { bytes in
            bytes.storeBytes(of: events.rawValue, toByteOffset: 0, as: UInt32.self)
            bytes.storeBytes(of: token, toByteOffset: Self.dataOffset, as: UInt64.self)
            return functions.control(descriptor, operation, fd, bytes.baseAddress)
        }
        guard result == 0 else { throw .systemCall(name, errno: errno) }
    }

    /// Waits up to `timeoutMilliseconds` for events, writing them into `buffer` (room for
    /// `buffer.count / eventSize` events). Returns how many arrived (0 on timeout or EINTR).
    func wait(into buffer: UnsafeMutableRawBufferPointer, timeoutMilliseconds: Int32) throws(HTTPServerError) -> Int {
        let result = functions.wait(
            descriptor, buffer.baseAddress, Int32(buffer.count / Self.eventSize), timeoutMilliseconds)
        if result < 0 {
            if errno == EINTR { return 0 }
            throw .systemCall("epoll_wait", errno: errno)
        }
        return Int(result)
    }

    /// The events and token of event number `index` in a buffer filled by `wait`.
    static func event(at index: Int, in buffer: UnsafeMutableRawBufferPointer) -> (events: Events, token: UInt64) {
        let offset = index * eventSize
        let events = buffer.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
        let token = buffer.loadUnaligned(fromByteOffset: offset + dataOffset, as: UInt64.self)
        return (Events(rawValue: events), token)
    }

    /// Creates a non-blocking, close-on-exec eventfd (a wake-up counter).
    static func makeEventFD() throws(HTTPServerError) -> Int32 {
        guard let functions = Self.functions else { throw .epollUnavailable }
        let descriptor = functions.eventFD(0, O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { throw .systemCall("eventfd", errno: errno) }
        return descriptor
    }
}
