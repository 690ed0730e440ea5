import Logging
import Primitives

/// The one reconnect-with-backoff of the long-lived connections (`PostgresListener`,
/// `PostgresNotifier`): opens a connection (and sets it up) when there is none or the last one
/// broke, and after a failure pauses `minimumBackoff` doubling to `maximumBackoff`, jittered so
/// that instances that lost the database together do not all come back at the same instant. The
/// first failure of an outage is logged as a warning, the retries at debug level. Used by the one
/// thread of its owner.
final class ReconnectingConnection {
    private let configuration: PostgresConfiguration
    private let timing: PostgresListener.Timing
    private let logger: Logger
    /// What the connection is for, in log lines ("listen for notifications").
    private let purpose: String
    private let metadata: Logger.Metadata
    private let setUp: (PostgresConnection) throws -> Void
    private var current: PostgresConnection?
    private var backoff: Duration
    /// Failures since the last success.
    private(set) var failuresInARow = 0

    /// Connections made with `configuration` (its application name adjusted by the caller; its
    /// dead-network and statement timeouts `timing`'s), each set up by `setUp` before it is used.
    init(
        configuration: PostgresConfiguration, timing: PostgresListener.Timing, logger: Logger, purpose: String,
        metadata: Logger.Metadata, setUp: @escaping (PostgresConnection) throws -> Void = { _ in }
    ) {
        var configuration = configuration
        configuration.deadNetworkTimeout = timing.deadNetworkTimeout
        // The server gives up on a statement when its client would (a stuck lock, an overloaded server).
        configuration.statementTimeout = timing.answerTimeout
        self.configuration = configuration
        self.timing = timing
        self.logger = logger
        self.purpose = purpose
        self.metadata = metadata
        self.setUp = setUp
        backoff = timing.minimumBackoff
    }

    /// The open connection; a new one, set up, when there is none or the last one broke.
    func open() throws -> PostgresConnection {
        if let current, !current.isBroken { return current }
        current = nil
        let connection = try PostgresConnection.connect(configuration, logger: logger)
        try setUp(connection)
        current = connection
        return connection
    }

    /// Records that the connection works: the next failure pauses `minimumBackoff` again.
    /// Returns whether failures came before.
    @discardableResult
    func succeeded() -> Bool {
        defer {
            failuresInARow = 0
            backoff = timing.minimumBackoff
        }
        return failuresInARow > 0
    }

    /// Forgets the connection (it was lost): the next `open` connects again.
    func drop() {
        current = nil
    }

    /// Records a failure of `open` or of a statement: forgets a broken connection, logs, and
    /// pauses through `pause` (given the milliseconds; it answers true when its owner stops).
    /// Returns whether to stop.
    func failed(_ error: any Error, pause: (_ milliseconds: Int32) -> Bool) -> Bool {
        failuresInARow += 1
        if current?.isBroken != false { current = nil }
        var metadata = metadata
        metadata["error"] = "\(error)"
        metadata["retry_ms"] = "\(backoff.milliseconds)"
        logger.log(level: failuresInARow == 1 ? .warning : .debug, "cannot \(purpose); retrying", metadata: metadata)
        let stop = pause(Self.jittered(backoff))
        backoff = min(backoff * 2, timing.maximumBackoff)
        return stop
    }

    /// `duration` in milliseconds, between half of it and all of it.
    private static func jittered(_ duration: Duration) -> Int32 {
        let milliseconds = max(1, duration.milliseconds)
        return Int32(clamping: milliseconds / 2 + Int64.random(in: 0...(milliseconds / 2)))
    }
}
