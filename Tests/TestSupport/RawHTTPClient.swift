import Foundation
import Glibc
import HTTPServer
import Primitives

/// Why a `RawHTTPClient` call failed.
public enum RawHTTPClientError: Error, Sendable, Equatable {
    /// `socket`/`connect` failed with this errno.
    case connectFailed(errno: Int32)
    /// `send` failed with this errno (EPIPE, ECONNRESET...).
    case sendFailed(errno: Int32)
    /// Nothing complete arrived before the timeout; `received` holds what did.
    case timedOut(received: [UInt8])
    /// The server closed (or reset) the connection before a complete response; `received` holds
    /// what arrived.
    case closed(received: [UInt8])
    /// The bytes are not an HTTP/1.1 response.
    case malformedResponse(String)
}

/// A response as read off the wire by `RawHTTPClient`.
public struct RawHTTPResponse: Sendable, Equatable {
    /// The status code.
    public let status: Int
    /// The reason phrase.
    public let reason: String
    /// The header fields in order.
    public let headers: HTTPHeaders
    /// The body bytes (by Content-Length, or up to the close when there is none).
    public let body: [UInt8]

    /// The body as UTF-8 text.
    public var text: String { String(decoding: body, as: UTF8.self) }

    /// The response whose bytes are the whole of `bytes` (a body without `Content-Length` runs to
    /// their end), as `RawHTTPClient.readResponse` reads it off a socket.
    public static func parse(_ bytes: [UInt8], isResponseToHead: Bool = false) throws(RawHTTPClientError) -> RawHTTPResponse {
        guard let headEnd = RawHTTPClient.find([13, 10, 13, 10], in: bytes) else {
            throw .malformedResponse("no header section")
        }
        let (status, reason, headers) = try parseHead(bytes[0..<headEnd])
        var body = Array(bytes[(headEnd + 4)...])
        if !hasBody(status: status, isResponseToHead: isResponseToHead) {
            body = []
        } else if let lengthText = headers["Content-Length"] {
            guard let length = Int(lengthText), length <= body.count else { throw .malformedResponse("bad Content-Length") }
            body = Array(body[0..<length])
        }
        return RawHTTPResponse(status: status, reason: reason, headers: headers, body: body)
    }

    /// The status line and header fields of a head (its bytes before the empty line).
    static func parseHead(_ bytes: ArraySlice<UInt8>) throws(RawHTTPClientError) -> (Int, String, HTTPHeaders) {
        let head = String(decoding: bytes, as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst()
        let statusParts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard statusParts.count >= 2, statusParts[0] == "HTTP/1.1", let status = Int(statusParts[1]) else {
            throw .malformedResponse("bad status line: \(statusLine)")
        }
        var headers = HTTPHeaders()
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { throw .malformedResponse("bad field line: \(line)") }
            headers.add(
                String(line[..<colon]),
                String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces))
        }
        return (status, statusParts.count > 2 ? String(statusParts[2]) : "", headers)
    }

    /// Whether a response with `status` has a body (none to HEAD, 1xx, 204 and 304).
    static func hasBody(status: Int, isResponseToHead: Bool) -> Bool {
        !(isResponseToHead || (100..<200).contains(status) || status == 204 || status == 304)
    }
}

/// A tiny blocking TCP client for tests: send raw bytes, read one response at a time, detect
/// the server closing, all with timeouts. Not thread-safe: use each client from one thread at a
/// time (it may be moved to another thread, hence `@unchecked Sendable`).
public final class RawHTTPClient: @unchecked Sendable {
    /// The socket.
    public let fd: Int32
    private var received: [UInt8] = []
    private var isClosed = false

    /// Connects to `host:port` (blocking, IPv4), from `sourceHost` when given (any 127.x.y.z
    /// address works on Linux, so tests can play clients at different addresses).
    public init(port: Int, host: String = "127.0.0.1", sourceHost: String? = nil) throws(RawHTTPClientError) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .connectFailed(errno: errno) }
        if let sourceHost {
            var source = sockaddr_in()
            source.sin_family = sa_family_t(AF_INET)
            inet_pton(AF_INET, sourceHost, &source.sin_addr)
            let bound = withUnsafePointer(to: &source) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                let code = errno
                Glibc.close(fd)
                throw .connectFailed(errno: code)
            }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &address.sin_addr)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            Glibc.close(fd)
            throw .connectFailed(errno: code)
        }
        var yes: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
        self.fd = fd
    }

    deinit {
        if !isClosed { Glibc.close(fd) }
    }

    /// Sends `text` as UTF-8.
    public func send(_ text: String) throws(RawHTTPClientError) {
        try send(Array(text.utf8))
    }

    /// Sends every byte (blocking).
    public func send(_ bytes: [UInt8]) throws(RawHTTPClientError) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { buffer in
                Glibc.send(fd, buffer.baseAddress.map { $0 + offset }, bytes.count - offset, Int32(MSG_NOSIGNAL))
            }
            if sent < 0 {
                if errno == EINTR { continue }
                throw .sendFailed(errno: errno)
            }
            offset += sent
        }
    }

    /// Reads one response. `isResponseToHead` reads no body whatever the Content-Length says.
    /// Interim (1xx) responses are returned like any other.
    public func readResponse(
        timeout: Duration = .seconds(10), isResponseToHead: Bool = false
    ) throws(RawHTTPClientError) -> RawHTTPResponse {
        let deadline = ContinuousClock.now + timeout
        var headEnd: Int?
        while true {
            headEnd = Self.find([13, 10, 13, 10], in: received)
            if headEnd != nil { break }
            try receiveMore(until: deadline)
        }
        guard let headEnd else { throw .malformedResponse("no header section") }
        let (status, reason, headers) = try RawHTTPResponse.parseHead(received[0..<headEnd])
        received.removeFirst(headEnd + 4)
        if !RawHTTPResponse.hasBody(status: status, isResponseToHead: isResponseToHead) {
            return RawHTTPResponse(status: status, reason: reason, headers: headers, body: [])
        }
        if let lengthText = headers["Content-Length"] {
            guard let length = Int(lengthText) else { throw .malformedResponse("bad Content-Length") }
            while received.count < length {
                try receiveMore(until: deadline)
            }
            let body = Array(received[0..<length])
            received.removeFirst(length)
            return RawHTTPResponse(status: status, reason: reason, headers: headers, body: body)
        }
        let body = try readUntilClosed(timeout: deadline - ContinuousClock.now)
        return RawHTTPResponse(status: status, reason: reason, headers: headers, body: body)
    }

    /// Reads until the server closes; returns everything not yet consumed.
    public func readUntilClosed(timeout: Duration = .seconds(10)) throws(RawHTTPClientError) -> [UInt8] {
        let deadline = ContinuousClock.now + timeout
        while true {
            do {
                try receiveMore(until: deadline)
            } catch .closed(let all) {
                received = []
                return all
            }
        }
    }

    /// True when the server closes or resets the connection within `timeout` (any data that
    /// arrives first is discarded); false if it stays open.
    public func waitForClose(timeout: Duration = .seconds(10)) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while true {
            do {
                try receiveMore(until: deadline)
                received = []
            } catch .closed {
                return true
            } catch {
                return false
            }
        }
    }

    /// True when no byte and no close arrives within `duration` (the connection is quiet).
    public func staysQuiet(for duration: Duration) -> Bool {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, Int32(clamping: max(0, duration.milliseconds))) == 0
    }

    /// Half-closes: no more bytes will be sent (FIN).
    public func shutdownWrite() {
        Glibc.shutdown(fd, Int32(SHUT_WR))
    }

    /// Closes the socket normally.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        Glibc.close(fd)
    }

    /// Closes with a reset (RST) instead of a FIN, as a crashed client would.
    public func reset() {
        guard !isClosed else { return }
        var option = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        close()
    }

    /// Reads whatever arrives before `deadline` into `received`.
    private func receiveMore(until deadline: ContinuousClock.Instant) throws(RawHTTPClientError) {
        let remaining = deadline - ContinuousClock.now
        guard remaining > .zero else { throw .timedOut(received: received) }
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptor, 1, Int32(clamping: max(1, remaining.milliseconds)))
        if ready == 0 { throw .timedOut(received: received) }
        if ready < 0 {
            if errno == EINTR { return }
            throw .closed(received: received)
        }
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count > 0 {
            received.append(contentsOf: chunk[0..<count])
            return
        }
        if count < 0 && errno == EINTR { return }
        throw .closed(received: received)
    }

    static func find(_ pattern: [UInt8], in bytes: [UInt8]) -> Int? {
        guard bytes.count >= pattern.count else { return nil }
        for start in 0...(bytes.count - pattern.count) where bytes[start] == pattern[0] {
            if Array(bytes[start..<(start + pattern.count)]) == pattern { return start }
        }
        return nil
    }
}
