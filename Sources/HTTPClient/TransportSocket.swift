#if canImport(Glibc)
import Glibc
#endif
import Primitives

/// A byte stream a response is read from: a plain socket or TLS over one. Every wait ends at the
/// request's deadline with a timeout `TransportError`.
protocol TransportStream: AnyObject {
    /// Sends all of `bytes`.
    func write(_ bytes: [UInt8]) throws(TransportError)
    /// Appends the bytes available next (waiting for some) to `buffer`; false at the end of the stream.
    func read(into buffer: inout [UInt8]) throws(TransportError) -> Bool
}

/// A connected, non-blocking TCP socket whose every wait (connect, send, receive) ends at a
/// deadline. Owns its descriptor and closes it in `deinit`. Used by one request on one thread.
final class TransportSocket: TransportStream {
    /// The most bytes one `read` takes from the kernel.
    static let readChunk = 16 * 1024

    private let descriptor: Int32
    /// When the request runs out of time, on `clock`.
    let deadline: Duration
    /// The clock of the deadline.
    let clock: MonotonicClock

    private init(descriptor: Int32, deadline: Duration, clock: MonotonicClock) {
        self.descriptor = descriptor
        self.deadline = deadline
        self.clock = clock
    }

    deinit {
        close(descriptor)
    }

    /// RFC 8305's recommended "Connection Attempt Delay": how long an attempt has before the next
    /// address is tried beside it.
    static let defaultAttemptDelay: Duration = .milliseconds(250)

    /// Resolves `host` (through `resolver`) and connects to one of its addresses before
    /// `deadline` (on `clock`), racing them as RFC 8305 (Happy Eyeballs v2) does: the addresses interleaved by
    /// family (starting with the family of the first), a new attempt started every
    /// `attemptDelay` while the earlier ones go on (at once when one fails), the first to connect
    /// kept and the others closed. So an address that never answers (IPv6 resolved first with
    /// IPv6 black-holed, say) costs `attemptDelay`, not the request. A refused or unreachable
    /// address is a `TransportError`, not a timeout.
    static func connect(
        host: String, port: UInt16, deadline: Duration, clock: MonotonicClock, resolver: HostResolver,
        attemptDelay: Duration = defaultAttemptDelay
    ) throws(TransportError) -> TransportSocket {
        let addresses = interleavedByFamily(try resolver.resolve(host, port: port, deadline: deadline, clock: clock))
        var lastError = "no address"
        var pending: [TransportSocket] = []
        var next = 0
        var nextAttemptAt = clock.now()
        while true {
            let now = clock.now()
            if next < addresses.count, pending.isEmpty || now >= nextAttemptAt {
                next += 1
                switch startAttempt(addresses[next - 1], deadline: deadline, clock: clock) {
                case .success(let attempt):
                    if attempt.connected { return attempt.socket }
                    pending.append(attempt.socket)
                    nextAttemptAt = now + attemptDelay
                case .failure(let error):
                    lastError = error.message
                }
                continue
            }
            guard !pending.isEmpty else { throw TransportError("cannot connect to \(host):\(port): \(lastError)") }
            guard now < deadline else { throw TransportError("request timed out", isTimeout: true) }
            let until = next < addresses.count ? min(deadline, nextAttemptAt) : deadline
            var descriptors = pending.map { pollfd(fd: $0.descriptor, events: Int16(POLLOUT), revents: 0) }
            let ready = poll(&descriptors, nfds_t(descriptors.count), Int32(clamping: (until - now).milliseconds + 1))
            if ready < 0 && errno != EINTR { throw TransportError("poll failed: \(String(cString: strerror(errno)))") }
            guard ready > 0 else { continue }
            var stillPending: [TransportSocket] = []
            for (attempt, polled) in zip(pending, descriptors) {
                guard polled.revents != 0 else {
                    stillPending.append(attempt)
                    continue
                }
                var socketError: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                guard getsockopt(attempt.descriptor, SOL_SOCKET, SO_ERROR, &socketError, &length) == 0 else {
                    lastError = String(cString: strerror(errno))
                    continue
                }
                // The others are closed by their deinit.
                if socketError == 0 { return attempt }
                lastError = String(cString: strerror(socketError))
            }
            // A failed attempt lets the next address start at once.
            if stillPending.count < pending.count { nextAttemptAt = now }
            pending = stillPending
        }
    }

    /// One non-blocking connect: a connected socket, one still connecting, or the reason it
    /// failed at once (no socket for the family, refused, unreachable).
    private static func startAttempt(
        _ candidate: ResolvedAddress, deadline: Duration, clock: MonotonicClock
    ) -> Result<(socket: TransportSocket, connected: Bool), TransportError> {
        let descriptor = socket(
            candidate.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
            candidate.socketProtocol)
        guard descriptor >= 0 else { return .failure(TransportError(String(cString: strerror(errno)))) }
        let connected = candidate.address.withUnsafeBytes { raw in
            raw.baseAddress.map { Glibc.connect(descriptor, $0.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count)) == 0 }
                ?? false
        }
        let connectError = errno
        // Owned from here: closed by deinit whichever way the attempt ends.
        let socket = TransportSocket(descriptor: descriptor, deadline: deadline, clock: clock)
        if connected { return .success((socket, true)) }
        guard connectError == EINPROGRESS else { return .failure(TransportError(String(cString: strerror(connectError)))) }
        return .success((socket, false))
    }

    /// RFC 8305, section 4: the addresses alternating between the family of the first and the
    /// other one, each family in its resolver order.
    static func interleavedByFamily(_ addresses: [ResolvedAddress]) -> [ResolvedAddress] {
        guard let first = addresses.first else { return [] }
        let preferred = addresses.filter { $0.family == first.family }
        let others = addresses.filter { $0.family != first.family }
        var result: [ResolvedAddress] = []
        for index in 0..<max(preferred.count, others.count) {
            if index < preferred.count { result.append(preferred[index]) }
            if index < others.count { result.append(others[index]) }
        }
        return result
    }

    func write(_ bytes: [UInt8]) throws(TransportError) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { raw in
                Glibc.send(descriptor, raw.baseAddress.map { $0 + offset }, raw.count - offset, Int32(MSG_NOSIGNAL))
            }
            if sent > 0 {
                offset += sent
            } else if sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                try wait(for: Int16(POLLOUT))
            } else if sent < 0 && errno == EINTR {
                continue
            } else {
                throw TransportError("send failed: \(String(cString: strerror(errno)))")
            }
        }
    }

    func read(into buffer: inout [UInt8]) throws(TransportError) -> Bool {
        var chunk = [UInt8](repeating: 0, count: Self.readChunk)
        while true {
            let received = chunk.withUnsafeMutableBytes { raw in recv(descriptor, raw.baseAddress, raw.count, 0) }
            if received > 0 {
                buffer.append(contentsOf: chunk[0..<received])
                return true
            }
            if received == 0 { return false }
            if errno == EAGAIN || errno == EWOULDBLOCK {
                try wait(for: Int16(POLLIN))
            } else if errno != EINTR {
                throw TransportError("receive failed: \(String(cString: strerror(errno)))")
            }
        }
    }

    /// Waits until the socket is ready for `events` (POLLIN/POLLOUT); throws a timeout at the deadline.
    private func wait(for events: Int16) throws(TransportError) {
        while true {
            let remaining = deadline - clock.now()
            guard remaining > .zero else { throw TransportError("request timed out", isTimeout: true) }
            let milliseconds = Int32(clamping: remaining.milliseconds + 1)
            var descriptors = pollfd(fd: descriptor, events: events, revents: 0)
            let ready = poll(&descriptors, 1, milliseconds)
            if ready > 0 { return }
            if ready < 0 && errno != EINTR { throw TransportError("poll failed: \(String(cString: strerror(errno)))") }
        }
    }
}
