import Foundation
import Glibc
import Synchronization

/// A TCP relay on 127.0.0.1 to the PostgreSQL server, which can make the connections it relays go
/// silent: they stay open, and what either end sends is accepted (the relay's kernel acknowledges
/// it) but never passed on, as on a half-open connection after a failover. Connections opened
/// after that are relayed again.
final class SilentProxy: Sendable {
    private struct State {
        var silencedBefore = 0
        var accepted = 0
        var closed = false
        var sockets: [Int32] = []
    }

    /// The port the relay listens on.
    let port: Int
    private let listener: Int32
    private let target: sockaddr_in
    private let state = Mutex(State())

    /// A relay to `host` (an IPv4 address) and `port`.
    init(toHost host: String, port targetPort: Int) throws {
        var target = sockaddr_in()
        target.sin_family = sa_family_t(AF_INET)
        target.sin_port = in_port_t(UInt16(targetPort).bigEndian)
        guard inet_pton(AF_INET, host, &target.sin_addr) == 1 else { throw ProxyError("not an IPv4 address: \(host)") }
        self.target = target
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard listener >= 0, bound == 0, Glibc.listen(listener, 16) == 0 else { throw ProxyError("cannot listen: errno \(errno)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        self.listener = listener
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread { [self] in acceptLoop() }.start()
    }

    /// Connections accepted so far.
    var accepted: Int { state.withLock { $0.accepted } }

    /// From now on, the connections open now pass nothing more, either way, and stay open.
    func silenceOpenConnections() {
        state.withLock { $0.silencedBefore = $0.accepted }
    }

    /// Closes the relay and every connection.
    func close() {
        let sockets = state.withLock { state -> [Int32] in
            state.closed = true
            return state.sockets
        }
        shutdown(listener, Int32(SHUT_RDWR))
        for socket in sockets { shutdown(socket, Int32(SHUT_RDWR)) }
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else {
                if errno == EINTR { continue }
                Glibc.close(listener)
                return
            }
            var target = self.target
            let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            let connected = withUnsafePointer(to: &target) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            let number = state.withLock { state -> Int? in
                guard !state.closed, connected == 0 else { return nil }
                state.accepted += 1
                state.sockets += [client, server]
                return state.accepted
            }
            guard let number else {
                Glibc.close(client)
                Glibc.close(server)
                continue
            }
            Thread { [self] in relay(client, server, number: number) }.start()
        }
    }

    /// Passes bytes both ways until either end closes, the relay closes, or (silenced) for ever.
    private func relay(_ client: Int32, _ server: Int32, number: Int) {
        defer {
            Glibc.close(client)
            Glibc.close(server)
        }
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let (closed, silenced) = state.withLock { ($0.closed, number <= $0.silencedBefore) }
            if closed { return }
            if silenced {
                Thread.sleep(forTimeInterval: 0.05)
                continue
            }
            var descriptors = [pollfd(fd: client, events: Int16(POLLIN), revents: 0), pollfd(fd: server, events: Int16(POLLIN), revents: 0)]
            guard poll(&descriptors, 2, 50) >= 0 || errno == EINTR else { return }
            // Silenced while it waited: what arrived stays unread.
            if state.withLock({ number <= $0.silencedBefore }) { continue }
            for (from, to) in [(0, server), (1, client)] where descriptors[from].revents != 0 {
                let count = read(descriptors[from].fd, &buffer, buffer.count)
                guard count > 0 else { return }
                var written = 0
                while written < count {
                    let result = buffer[written..<count].withUnsafeBytes { write(to, $0.baseAddress, $0.count) }
                    guard result > 0 else { return }
                    written += result
                }
            }
        }
    }
}

struct ProxyError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
