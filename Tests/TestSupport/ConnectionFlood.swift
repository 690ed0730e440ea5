import Foundation
import Glibc

/// Hostile-client tooling: many keep-alive connections from one source address (any 127.x.y.z
/// works on Linux), opened without waiting for the server to accept them, each sending
/// `GET /health` once connected and reading whatever comes back, from one thread. What the
/// flood got is counted as it goes.
public final class ConnectionFlood: Sendable {
    private struct Progress {
        var opened = 0
        var answered = 0
        var closedByServer = 0
        var connectFailures = 0
    }

    private let progress = Locked(Progress())
    private let stopRequested = Locked(false)
    private let thread: BackgroundThread<Void>

    /// Connections whose socket was created and whose connect was started.
    public var opened: Int { progress.value.opened }
    /// Connections that got a response to their `GET /health`.
    public var answered: Int { progress.value.answered }
    /// Connections the server closed (or reset).
    public var closedByServer: Int { progress.value.closedByServer }
    /// Sockets that could not be created, bound or connected.
    public var connectFailures: Int { progress.value.connectFailures }

    /// Starts opening `count` connections to `127.0.0.1:port` from `sourceHost`; every round
    /// (`round` apart) each open connection sends `GET /health` if it has not yet, and reads.
    public init(port: Int, sourceHost: String, count: Int, round: Duration = .milliseconds(500)) {
        let progress = self.progress
        let stopRequested = self.stopRequested
        thread = BackgroundThread {
            Self.run(
                port: port, sourceHost: sourceHost, count: count, round: round, progress: progress,
                stopRequested: stopRequested)
        }
    }

    /// Stops the flood and closes its connections.
    public func stop() {
        stopRequested.withLock { $0 = true }
        _ = try? thread.join(timeout: .seconds(120))
    }

    private struct Flooder {
        let fd: Int32
        var sent = false
        var open = true
    }

    private static func run(
        port: Int, sourceHost: String, count: Int, round: Duration, progress: Locked<Progress>, stopRequested: Locked<Bool>
    ) {
        var flooders: [Flooder] = []
        flooders.reserveCapacity(count)
        defer { for flooder in flooders where flooder.open { Glibc.close(flooder.fd) } }
        let request = Array("GET /health HTTP/1.1\r\nHost: h\r\n\r\n".utf8)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !stopRequested.value {
            // Open the next few hundred, then serve the open ones once.
            let target = min(count, flooders.count + 500)
            while flooders.count < target {
                guard let fd = connect(port: port, sourceHost: sourceHost) else {
                    progress.withLock { $0.connectFailures += 1 }
                    flooders.append(Flooder(fd: -1, sent: true, open: false))
                    continue
                }
                flooders.append(Flooder(fd: fd))
                progress.withLock { $0.opened += 1 }
            }
            var answered = 0
            var closed = 0
            for index in flooders.indices where flooders[index].open {
                let fd = flooders[index].fd
                let received = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if received > 0 {
                    answered += 1
                } else if received == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                    Glibc.close(fd)
                    flooders[index].open = false
                    closed += 1
                    continue
                }
                if !flooders[index].sent {
                    let sent = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    if sent == request.count { flooders[index].sent = true }
                }
            }
            progress.withLock {
                $0.answered += answered
                $0.closedByServer += closed
            }
            if flooders.count == count {
                Thread.sleep(forTimeInterval: Double(max(1, round.milliseconds)) / 1000)
            }
        }
    }

    /// A non-blocking socket from `sourceHost` whose connect to `127.0.0.1:port` has started.
    private static func connect(port: Int, sourceHost: String) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        var source = sockaddr_in()
        source.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, sourceHost, &source.sin_addr)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        let bound = withUnsafePointer(to: &source) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, connected == 0 || errno == EINPROGRESS else {
            Glibc.close(fd)
            return nil
        }
        return fd
    }
}
