import Dispatch
import FoundationEssentials
import Primitives
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One address of a host, copied out of `getaddrinfo`'s list.
struct ResolvedAddress: Sendable {
    /// `AF_INET` or `AF_INET6`.
    let family: Int32
    /// The protocol for `socket`.
    let socketProtocol: Int32
    /// The `sockaddr` bytes for `connect`.
    let address: [UInt8]
}

/// Looks up a host's addresses within a request's deadline. `getaddrinfo` takes no timeout, so
/// the lookup runs on a thread of its own and the caller waits only until the deadline; a lookup
/// that outlives it finishes on its own and its answer is dropped.
struct HostResolver: Sendable {
    /// The lookup itself: `getaddrinfo` (tests substitute a slow one).
    var lookup: @Sendable (_ host: String, _ port: UInt16) -> Result<[ResolvedAddress], TransportError> = HostResolver.systemLookup
    /// Starts the lookup's thread (tests substitute one that fails).
    var startThread: @Sendable (@escaping @Sendable () -> Void) throws(ThreadStartError) -> Void = { body throws(ThreadStartError) in
        try DedicatedThread.start(body)
    }

    /// The addresses of `host`, or a timeout `TransportError` when the lookup is not done by
    /// `deadline` (on `clock`).
    func resolve(_ host: String, port: UInt16, deadline: Duration, clock: MonotonicClock) throws(TransportError) -> [ResolvedAddress] {
        let pending = PendingLookup()
        let lookup = self.lookup
        do throws(ThreadStartError) {
            try startThread { pending.finish(lookup(host, port)) }
        } catch {
            throw TransportError("cannot resolve \(host): \(error)")
        }
        let remaining = deadline - clock.now()
        // A semaphore waits until a `DispatchTime`: the remaining time is measured on `clock`.
        guard remaining > .zero, pending.done.wait(timeout: .now() + .nanoseconds(Int(remaining.nanoseconds))) == .success,
            let result = pending.result.withLock({ $0 })
        else {
            throw TransportError("resolving \(host) timed out", isTimeout: true)
        }
        return try result.get()
    }

    /// `getaddrinfo` for TCP, every address copied out.
    static func systemLookup(_ host: String, _ port: UInt16) -> Result<[ResolvedAddress], TransportError> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            return .failure(TransportError("cannot resolve \(host): \(String(cString: gai_strerror(status)))"))
        }
        defer { freeaddrinfo(first) }
        var addresses: [ResolvedAddress] = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            entry = current.pointee.ai_next
            guard let address = current.pointee.ai_addr else { continue }
            addresses.append(
                ResolvedAddress(
                    family: current.pointee.ai_family, socketProtocol: current.pointee.ai_protocol,
                    address: Array(UnsafeRawBufferPointer(start: address, count: Int(current.pointee.ai_addrlen)))))
        }
        return .success(addresses)
    }
}

/// A lookup's answer, handed from its thread to the waiting one.
private final class PendingLookup: Sendable {
    let result = Mutex<Result<[ResolvedAddress], TransportError>?>(nil)
    let done = DispatchSemaphore(value: 0)

    func finish(_ answer: Result<[ResolvedAddress], TransportError>) {
        result.withLock { $0 = answer }
        done.signal()
    }
}
