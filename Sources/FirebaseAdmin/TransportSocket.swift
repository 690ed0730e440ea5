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
    /// When the request runs out of time.
    let deadline: ContinuousClock.Instant

    private init(descriptor: Int32, deadline: ContinuousClock.Instant) {
        self.descriptor = descriptor
        self.deadline = deadline
    }

    deinit {
        close(descriptor)
    }

    /// Resolves `host` (through `resolver`) and connects to the first of its addresses that
    /// accepts, before `deadline`. A refused or unreachable address is a `TransportError`, not a timeout.
    static func connect(
        host: String, port: UInt16, deadline: ContinuousClock.Instant, resolver: HostResolver
    ) throws(TransportError) -> TransportSocket {
        var lastError = "no address"
        for candidate in try resolver.resolve(host, port: port, deadline: deadline) {
            let descriptor = socket(
                candidate.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
                candidate.socketProtocol)
            guard descriptor >= 0 else {
                lastError = String(cString: strerror(errno))
                continue
            }
            let connected = candidate.address.withUnsafeBytes { raw in
                raw.baseAddress.map { Glibc.connect(descriptor, $0.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count)) == 0 }
                    ?? false
            }
            let connectError = errno
            // Owned from here: closed by deinit whichever way this iteration ends.
            let connection = TransportSocket(descriptor: descriptor, deadline: deadline)
            if connected { return connection }
            guard connectError == EINPROGRESS else {
                lastError = String(cString: strerror(connectError))
                continue
            }
            try connection.wait(for: Int16(POLLOUT))
            var socketError: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &socketError, &length) == 0 else {
                lastError = String(cString: strerror(errno))
                continue
            }
            if socketError == 0 { return connection }
            lastError = String(cString: strerror(socketError))
        }
        throw TransportError("cannot connect to \(host):\(port): \(lastError)")
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
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else { throw TransportError("request timed out", isTimeout: true) }
            let milliseconds = Int32(clamping: remaining.milliseconds + 1)
            var descriptors = pollfd(fd: descriptor, events: events, revents: 0)
            let ready = poll(&descriptors, 1, milliseconds)
            if ready > 0 { return }
            if ready < 0 && errno != EINTR { throw TransportError("poll failed: \(String(cString: strerror(errno)))") }
        }
    }
}
