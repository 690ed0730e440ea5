import Dispatch
import Foundation
import Glibc
import Synchronization

/// Hostile-client tooling: `count` clients, each on a thread of its own, keeping a connection
/// busy the same way until `stop` (connecting again, from `source(index)`, when the server
/// closes it or `keepBusy` returns).
public final class BusyClients: Sendable {
    private let stopRequested = Atomic<Bool>(false)
    private let done = DispatchGroup()

    /// Starts the clients against `127.0.0.1:port`; `keepBusy` gets client `index`'s connection.
    public init(
        port: Int, count: Int, source: @escaping @Sendable (Int) -> String,
        keepBusy: @escaping @Sendable (_ client: RawHTTPClient, _ index: Int, _ clients: BusyClients) throws -> Void
    ) {
        for index in 0..<count {
            done.enter()
            Thread.detachNewThread { [self] in
                defer { done.leave() }
                while !isStopping {
                    do {
                        try keepBusy(try RawHTTPClient(port: port, sourceHost: source(index)), index, self)
                    } catch {
                        Thread.sleep(forTimeInterval: 0.05)
                    }
                }
            }
        }
    }

    /// `count` clients all from `sourceHost`.
    public convenience init(
        port: Int, sourceHost: String, count: Int,
        keepBusy: @escaping @Sendable (_ client: RawHTTPClient, _ clients: BusyClients) throws -> Void
    ) {
        self.init(port: port, count: count, source: { _ in sourceHost }) { client, _, clients in try keepBusy(client, clients) }
    }

    /// Whether `stop` was called.
    public var isStopping: Bool { stopRequested.load(ordering: .relaxed) }

    /// Sleeps `seconds` in short steps; false when asked to stop meanwhile.
    public func pause(_ seconds: Double) -> Bool {
        var left = seconds
        while left > 0 && !isStopping {
            Thread.sleep(forTimeInterval: min(left, 0.1))
            left -= 0.1
        }
        return !isStopping
    }

    /// Sends `request` on `client` with a 4 KiB receive buffer and reads its answer 160 bytes
    /// every 100 ms (1.6 KB/s, a slow phone) until the server closes or `stop` is called.
    public func readSlowly(_ request: String, on client: RawHTTPClient) throws {
        var small: Int32 = 4096
        _ = setsockopt(client.fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        try client.send(request)
        var chunk = [UInt8](repeating: 0, count: 160)
        while pause(0.1) {
            let count = chunk.withUnsafeMutableBytes { recv(client.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count == 0 || (count < 0 && errno != EAGAIN && errno != EWOULDBLOCK) { return }
        }
    }

    /// Stops the clients and waits until each has returned.
    public func stop() {
        stopRequested.store(true, ordering: .relaxed)
        done.wait()
    }
}
