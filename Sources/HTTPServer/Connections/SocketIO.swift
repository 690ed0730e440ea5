internal import CLinux
import Glibc

/// The socket system calls the server makes, with errno captured where each fails.
enum SocketIO {
    /// Creates a non-blocking, close-on-exec TCP socket bound to `host:port` and listening.
    static func makeListener(host: String, port: Int, backlog: Int) throws(HTTPServerError) -> Int32 {
        guard (0...65535).contains(port) else { throw .invalidConfiguration("port \(port) is not in 0...65535") }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var results: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &results)
        guard status == 0, let first = results else {
            throw .addressResolution(host: host, message: String(cString: gai_strerror(status)))
        }
        defer { freeaddrinfo(results) }
        let fd = socket(
            first.pointee.ai_family,
            Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
                | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .systemCall("socket", errno: errno) }
        var yes: Int32 = 1
        guard setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            let code = errno
            Glibc.close(fd)
            throw .systemCall("setsockopt(SO_REUSEADDR)", errno: code)
        }
        guard bind(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else {
            let code = errno
            Glibc.close(fd)
            throw .systemCall("bind", errno: code)
        }
        guard listen(fd, Int32(clamping: backlog)) == 0 else {
            let code = errno
            Glibc.close(fd)
            throw .systemCall("listen", errno: code)
        }
        return fd
    }

    /// The local port a socket is bound to.
    static func localPort(of fd: Int32) throws(HTTPServerError) -> Int {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard result == 0 else { throw .systemCall("getsockname", errno: errno) }
        return describe(storage).port
    }

    /// The outcome of one `accept4`.
    enum AcceptResult {
        case accepted(fd: Int32, remoteAddress: String)
        /// No pending connection (EAGAIN).
        case wouldBlock
        /// A transient failure (EINTR, ECONNABORTED, EPROTO...): try again at once.
        case retry
        /// Out of descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM): back off.
        case exhausted(errno: Int32)
        /// Anything else.
        case failed(errno: Int32)
    }

    /// Accepts one connection as a non-blocking, close-on-exec socket with `TCP_NODELAY`.
    static func accept(from listener: Int32) -> AcceptResult {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let fd = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                locify_accept4(listener, address, &length, Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue))
            }
        }
        guard fd >= 0 else {
            let code = errno
            switch code {
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case EINTR, ECONNABORTED, EPROTO, EPERM, ENETDOWN, ENOPROTOOPT, EHOSTDOWN, ENONET, EHOSTUNREACH,
                EOPNOTSUPP, ENETUNREACH:
                return .retry
            case EMFILE, ENFILE, ENOBUFS, ENOMEM: return .exhausted(errno: code)
            default: return .failed(errno: code)
            }
        }
        var yes: Int32 = 1
        // Responses are written whole; never wait for Nagle.
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
        let (address, port) = describe(storage)
        return .accepted(fd: fd, remoteAddress: "\(address):\(port)")
    }

    /// The printable address and the port of a socket address (`[v6]` in brackets).
    static func describe(_ storage: sockaddr_storage) -> (address: String, port: Int) {
        var copy = storage
        return withUnsafeBytes(of: &copy) { raw -> (String, Int) in
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
            switch Int32(storage.ss_family) {
            case AF_INET:
                var address = raw.loadUnaligned(as: sockaddr_in.self)
                inet_ntop(AF_INET, &address.sin_addr, &text, socklen_t(text.count))
                return (
                    String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self),
                    Int(UInt16(bigEndian: address.sin_port))
                )
            case AF_INET6:
                var address = raw.loadUnaligned(as: sockaddr_in6.self)
                inet_ntop(AF_INET6, &address.sin6_addr, &text, socklen_t(text.count))
                let printable = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                return ("[\(printable)]", Int(UInt16(bigEndian: address.sin6_port)))
            default:
                return ("unknown", 0)
            }
        }
    }

    /// Whether bytes (or the peer's close) wait to be read on `fd`, without reading them.
    static func hasPendingInput(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        let peeked = recv(fd, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT))
        return peeked > 0
    }

    /// Writes 1 to an eventfd (wakes whoever polls it). Failure (counter full) is harmless.
    static func signal(eventFD: Int32) {
        var one: UInt64 = 1
        _ = Glibc.write(eventFD, &one, MemoryLayout<UInt64>.size)
    }

    /// Resets an eventfd's counter.
    static func drain(eventFD: Int32) {
        var value: UInt64 = 0
        _ = Glibc.read(eventFD, &value, MemoryLayout<UInt64>.size)
    }
}
