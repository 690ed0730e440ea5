import Glibc
import Logging
import Primitives
import Synchronization

/// One connection that `LISTEN`s on a channel, on a thread of its own, and hands each
/// notification's payload to `onNotification`. PostgreSQL sends a notification only when the
/// transaction that made it commits, to every session listening at that moment.
///
/// A lost connection (a terminated backend, a restart, a failover, a probe unanswered for
/// `probeTimeout`, a silent network for `deadNetworkTimeout`) is opened again with backoff
/// (`ReconnectingConnection`). Notifications sent while no session listened are lost, so `onListening` runs
/// each time the listener listens again (and the first time): the caller re-checks whatever those
/// notifications would have signalled. Both callbacks run on the listener's thread and must be
/// quick.
public final class PostgresListener: Sendable {
    /// Timing of the listener; the defaults suit production, tests shorten them.
    public struct Timing: Sendable {
        /// The first pause after a failed connect, doubled after each failure. Default 100 ms.
        public var minimumBackoff: Duration = .milliseconds(100)
        /// The longest pause between connect attempts. Default 5 s.
        public var maximumBackoff: Duration = .seconds(5)
        /// After this long without traffic, a probe (`SELECT 1`) checks that the server answers.
        /// Default 10 s.
        public var probeInterval: Duration = .seconds(10)
        /// A probe unanswered this long means the connection is lost. Default 5 s.
        public var probeTimeout: Duration = .seconds(5)
        /// The longest wait for the answer to a statement (`LISTEN`, a notifier's send) before the
        /// connection counts as lost: the server's `statement_timeout` cannot fire on a connection
        /// whose peer went silent. Default 5 s.
        public var answerTimeout: Duration = .seconds(5)
        /// The connections' `PostgresConfiguration.deadNetworkTimeout` (TCP user timeout and
        /// keepalives), so that a half-open connection breaks within seconds rather than the
        /// minute a pooled one allows. Default 6 s.
        public var deadNetworkTimeout: Duration = .seconds(6)
        /// The clock the probes, sends and deadlines are timed with.
        public var clock: MonotonicClock = .system

        /// The defaults.
        public init() {}
    }

    /// What the listener has done so far, for metrics.
    public struct Statistics: Sendable, Equatable {
        /// Whether a connection listens now.
        public var isListening: Bool
        /// Notifications received on the channel.
        public var notifications: Int
        /// Times the listener listened again after losing its connection.
        public var reconnects: Int
    }

    private struct State {
        var isListening = false
        var notifications = 0
        var reconnects = 0
    }

    /// The channel listened to.
    public let channel: String
    private let configuration: PostgresConfiguration
    private let timing: Timing
    private let logger: Logger
    private let onListening: @Sendable () -> Void
    private let onNotification: @Sendable (String) -> Void
    private let state = Mutex(State())
    /// The pipe `stop` writes to, so that the thread's `poll` returns at once.
    private let stopPipe: (read: Int32, write: Int32)
    private let thread = BackgroundThread(name: "pg-listen")

    /// A listener on `channel` (a lower-case SQL identifier: letters, digits, `_`), connecting with
    /// `configuration`. Nothing happens until `start()`.
    public init(
        configuration: PostgresConfiguration, channel: String, timing: Timing = Timing(), logger: Logger,
        onListening: @escaping @Sendable () -> Void, onNotification: @escaping @Sendable (String) -> Void
    ) {
        precondition(Self.isPlainIdentifier(channel), "the channel must be a lower-case SQL identifier: \(channel)")
        self.channel = channel
        self.configuration = configuration
        self.timing = timing
        self.logger = logger
        self.onListening = onListening
        self.onNotification = onNotification
        var descriptors: [Int32] = [-1, -1]
        let result = pipe(&descriptors)
        precondition(result == 0, "pipe failed: errno \(errno)")
        for descriptor in descriptors {
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
            _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        }
        stopPipe = (descriptors[0], descriptors[1])
    }

    deinit {
        Glibc.close(stopPipe.read)
        Glibc.close(stopPipe.write)
    }

    /// Starts the listening thread (once).
    public func start() {
        thread.start { [self] in run() }
    }

    /// Stops listening and waits for the thread to end (at most a connect or statement timeout
    /// when it is in the middle of one). Safe to call more than once.
    public func stop() {
        thread.stop {
            var byte: UInt8 = 1
            _ = write(stopPipe.write, &byte, 1)
        }
    }

    /// Whether it listens now, and its counts.
    public var statistics: Statistics {
        state.withLock { Statistics(isListening: $0.isListening, notifications: $0.notifications, reconnects: $0.reconnects) }
    }

    // MARK: - The thread

    private var isStopping: Bool { thread.isStopping }

    private func run() {
        var listenedBefore = false
        var listenerConfiguration = configuration
        listenerConfiguration.applicationName = configuration.applicationName + "-listen"
        let link = ReconnectingConnection(
            configuration: listenerConfiguration, timing: timing, logger: logger, purpose: "listen for notifications",
            metadata: ["channel": "\(channel)"]
        ) { [channel, timing] connection in
            try connection.query("LISTEN \(unsafeSQL: "\"\(channel)\"")", answerWithin: timing.answerTimeout, clock: timing.clock)
        }
        while !isStopping {
            let connection: PostgresConnection
            do {
                connection = try link.open()
            } catch {
                if link.failed(error, pause: { waitForStop(timeoutMilliseconds: $0) }) { break }
                continue
            }
            state.withLock { state in
                state.isListening = true
                if listenedBefore { state.reconnects += 1 }
            }
            if link.succeeded() || listenedBefore {
                logger.info("listening for notifications again", metadata: ["channel": "\(channel)"])
            }
            listenedBefore = true
            onListening()
            let stopRequested = listen(on: connection)
            state.withLock { $0.isListening = false }
            if stopRequested { break }
            link.drop()
            logger.warning("lost the connection that listens for notifications; reconnecting", metadata: ["channel": "\(channel)"])
        }
    }

    /// Delivers notifications until the connection is lost (false) or `stop` is called (true).
    private func listen(on connection: PostgresConnection) -> Bool {
        let clock = timing.clock
        var lastTraffic = clock.now()
        var probeSentAt: Duration?
        while true {
            let socket = connection.socketDescriptor
            guard socket >= 0 else { return false }
            let wait: Duration
            if let sentAt = probeSentAt {
                wait = timing.probeTimeout - (clock.now() - sentAt)
            } else {
                wait = timing.probeInterval - (clock.now() - lastTraffic)
            }
            var descriptors = [
                pollfd(fd: socket, events: Int16(POLLIN), revents: 0),
                pollfd(fd: stopPipe.read, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&descriptors, 2, Int32(clamping: max(0, wait.milliseconds) + 1))
            if ready < 0 {
                if errno == EINTR { continue }
                return false
            }
            if descriptors[1].revents != 0 { return true }
            if descriptors[0].revents != 0 {
                guard connection.readInput() else { return false }
                lastTraffic = clock.now()
                var received = 0
                while let notification = connection.nextNotification() {
                    guard notification.channel == channel else { continue }
                    received += 1
                    onNotification(notification.payload)
                }
                if received > 0 { state.withLock { $0.notifications += received } }
                if probeSentAt != nil {
                    do {
                        if try connection.collectProbeAnswer() { probeSentAt = nil }
                    } catch {
                        return false
                    }
                }
                continue
            }
            if let sentAt = probeSentAt {
                if clock.now() - sentAt >= timing.probeTimeout { return false }
            } else if clock.now() - lastTraffic >= timing.probeInterval {
                guard connection.sendProbe() else { return false }
                probeSentAt = clock.now()
            }
        }
    }

    /// Sleeps up to `timeoutMilliseconds`; true when `stop` was called.
    private func waitForStop(timeoutMilliseconds: Int32) -> Bool {
        var descriptor = pollfd(fd: stopPipe.read, events: Int16(POLLIN), revents: 0)
        while true {
            let ready = poll(&descriptor, 1, timeoutMilliseconds)
            if ready < 0 && errno == EINTR { continue }
            return ready > 0 || isStopping
        }
    }

    private static func isPlainIdentifier(_ name: String) -> Bool {
        guard let first = name.utf8.first, first == UInt8(ascii: "_") || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first)
        else { return false }
        return name.utf8.count <= 63
            && name.utf8.allSatisfy { byte in
                byte == UInt8(ascii: "_") || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
            }
    }
}
