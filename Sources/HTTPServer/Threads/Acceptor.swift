import FoundationEssentials
import Glibc
import Logging
import Synchronization

/// The thread that accepts connections and deals them round-robin to the event loops. A
/// connection from an address that already has `maxConnectionsPerAddress` open is closed at once.
/// While `maxConnections` are open, each client waiting in the listen backlog is accepted in place
/// of a connection of the address holding the most, idle or busy (`EvictionRound`). It backs off
/// briefly when the process runs out of descriptors, instead of spinning.
final class Acceptor: Sendable {
    private let listenFD: Int32
    private let context: ServerContext
    private let loops: [EventLoop]
    private let stopRequested = Atomic<Bool>(false)

    /// Pause after EMFILE/ENFILE/ENOBUFS/ENOMEM or an unexpected accept failure.
    private static let backOffMilliseconds: Int32 = 100
    /// Safety net while waiting at the connection limit (a close also wakes the acceptor).
    private static let limitRecheckMilliseconds: Int32 = 250
    /// How many connections beyond `maxConnections` may be open while those chosen to make room
    /// for them are still being closed by their loops (or finish their response).
    private static let evictionSlack = 64

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
        let maxConnections = context.configuration.maxConnections
        var next = 0
        while !stopRequested.load(ordering: .acquiring) {
            let open = context.counters.openConnections.load(ordering: .acquiring)
            if open >= maxConnections {
                // Full: a waiting client is accepted in place of a connection of the address
                // holding the most, which its loop closes; at most `evictionSlack` beyond the
                // limit meanwhile, then only a close (or the recheck) wakes the acceptor.
                guard open < maxConnections + Self.evictionSlack else {
                    waitForWake(milliseconds: Self.limitRecheckMilliseconds)
                    continue
                }
                if waitForClient(milliseconds: Self.limitRecheckMilliseconds), case .accepted = acceptOne(dealingTo: &next) {
                    EvictionRound(addresses: context.addressConnections.mostConnected(), loops: loops).start()
                }
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
                switch acceptOne(dealingTo: &next) {
                case .accepted, .refused: continue
                case .none: break acceptLoop
                }
            }
        }
    }

    /// What `acceptOne` did.
    private enum Accepted {
        /// A connection went to a loop (or was closed because the loops have stopped).
        case accepted
        /// A connection was closed at once: its address has `maxConnectionsPerAddress` open.
        case refused
        /// No connection was waiting, or accept failed (after a back-off where it should).
        case none
    }

    /// Accepts one connection and deals it to loop `next` (then moves `next` on), unless its
    /// address has its limit.
    private func acceptOne(dealingTo next: inout Int) -> Accepted {
        while true {
            switch SocketIO.accept(from: listenFD) {
            case .accepted(let fd, let remoteAddress):
                let socket = AcceptedSocket(fd: fd, remoteAddress: remoteAddress)
                guard context.addressConnections.open(socket.clientAddress) else {
                    context.counters.refusedConnections.add(1, ordering: .relaxed)
                    Glibc.close(fd)
                    return .refused
                }
                context.counters.openConnections.add(1, ordering: .acquiringAndReleasing)
                let loop = loops[next % loops.count]
                next &+= 1
                if !loop.adopt(socket) {
                    socket.close(context: context)
                }
                return .accepted
            case .wouldBlock:
                return .none
            case .retry:
                continue
            case .exhausted(let code):
                context.logger.warning(
                    "cannot accept: out of descriptors or memory; backing off", metadata: ["errno": "\(code)"])
                waitForWake(milliseconds: Self.backOffMilliseconds)
                return .none
            case .failed(let code):
                context.logger.warning("accept failed", metadata: ["errno": "\(code)"])
                waitForWake(milliseconds: Self.backOffMilliseconds)
                return .none
            }
        }
    }

    /// Waits at most `milliseconds` for a connection in the listen backlog (or a wake-up);
    /// true when one waits.
    private func waitForClient(milliseconds: Int32) -> Bool {
        var descriptors = [
            pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0),
            pollfd(fd: context.acceptorWakeFD, events: Int16(POLLIN), revents: 0),
        ]
        guard poll(&descriptors, 2, milliseconds) > 0 else { return false }
        if descriptors[1].revents != 0 { SocketIO.drain(eventFD: context.acceptorWakeFD) }
        return descriptors[0].revents & Int16(POLLIN) != 0 && !stopRequested.load(ordering: .acquiring)
    }

    private func waitForWake(milliseconds: Int32) {
        var descriptor = pollfd(fd: context.acceptorWakeFD, events: Int16(POLLIN), revents: 0)
        if poll(&descriptor, 1, milliseconds) > 0 {
            SocketIO.drain(eventFD: context.acceptorWakeFD)
        }
    }
}

/// An accepted socket on its way to an event loop, with its peer and the peer's key in the
/// per-address limits.
struct AcceptedSocket: Sendable {
    let fd: Int32
    /// The peer as `address:port`.
    let remoteAddress: String
    /// `ClientAddress.key(remoteAddress)`.
    let clientAddress: String

    init(fd: Int32, remoteAddress: String) {
        self.fd = fd
        self.remoteAddress = remoteAddress
        self.clientAddress = ClientAddress.key(remoteAddress)
    }

    /// Closes a socket that never became a connection, and forgets it in the counts.
    func close(context: ServerContext) {
        Glibc.close(fd)
        context.connectionClosed(clientAddress: clientAddress)
    }
}
