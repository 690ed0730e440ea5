import FoundationEssentials
import Glibc
import Logging
import Synchronization

/// The thread that accepts connections and deals them round-robin to the event loops. It stops
/// accepting while `maxConnections` are open (clients then wait in the listen backlog) and backs
/// off briefly when the process runs out of descriptors, instead of spinning.
final class Acceptor: Sendable {
    private let listenFD: Int32
    private let context: ServerContext
    private let loops: [EventLoop]
    private let stopRequested = Atomic<Bool>(false)

    /// Pause after EMFILE/ENFILE/ENOBUFS/ENOMEM or an unexpected accept failure.
    private static let backOffMilliseconds: Int32 = 100
    /// Safety net while waiting at the connection limit (a close also wakes the acceptor).
    private static let limitRecheckMilliseconds: Int32 = 250

    init(listenFD: Int32, context: ServerContext, loops: [EventLoop]) {
        self.listenFD = listenFD
        self.context = context
        self.loops = loops
    }

    /// Asks the thread to stop; it closes the listening socket on its way out.
    func stop() {
        stopRequested.store(true, ordering: .releasing)
        SocketIO.signal(eventFD: context.acceptorWakeFD)
    }

    /// The thread body.
    func run() {
        defer { Glibc.close(listenFD) }
        var next = 0
        let maxConnections = context.configuration.maxConnections
        while !stopRequested.load(ordering: .acquiring) {
            if context.counters.openConnections.load(ordering: .acquiring) >= maxConnections {
                waitForWake(milliseconds: Self.limitRecheckMilliseconds)
                continue
            }
            var descriptors = [
                pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0),
                pollfd(fd: context.acceptorWakeFD, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&descriptors, 2, -1)
            if ready < 0 && errno != EINTR {
                context.logger.warning("accept poll failed", metadata: ["errno": "\(errno)"])
                waitForWake(milliseconds: Self.backOffMilliseconds)
                continue
            }
            if descriptors[1].revents != 0 { SocketIO.drain(eventFD: context.acceptorWakeFD) }
            if stopRequested.load(ordering: .acquiring) { break }
            acceptLoop: while context.counters.openConnections.load(ordering: .acquiring) < maxConnections {
                switch SocketIO.accept(from: listenFD) {
                case .accepted(let fd, let remoteAddress):
                    context.counters.openConnections.add(1, ordering: .acquiringAndReleasing)
                    let loop = loops[next % loops.count]
                    next &+= 1
                    if !loop.adopt(fd: fd, remoteAddress: remoteAddress) {
                        Glibc.close(fd)
                        context.connectionClosed()
                    }
                case .wouldBlock:
                    break acceptLoop
                case .retry:
                    continue
                case .exhausted(let code):
                    context.logger.warning(
                        "cannot accept: out of descriptors or memory; backing off", metadata: ["errno": "\(code)"])
                    waitForWake(milliseconds: Self.backOffMilliseconds)
                    break acceptLoop
                case .failed(let code):
                    context.logger.warning("accept failed", metadata: ["errno": "\(code)"])
                    waitForWake(milliseconds: Self.backOffMilliseconds)
                    break acceptLoop
                }
            }
        }
    }

    private func waitForWake(milliseconds: Int32) {
        var descriptor = pollfd(fd: context.acceptorWakeFD, events: Int16(POLLIN), revents: 0)
        if poll(&descriptor, 1, milliseconds) > 0 {
            SocketIO.drain(eventFD: context.acceptorWakeFD)
        }
    }
}
