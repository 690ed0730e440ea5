import Logging
import Synchronization

/// Log records captured for assertions.
public final class LogCapture: Sendable {
    /// One logged message, its metadata flattened to strings.
    public struct Record: Sendable {
        /// The level it was logged at.
        public var level: Logger.Level
        /// The message.
        public var message: String
        /// The logger's and the call's metadata, the call's winning.
        public var metadata: [String: String]
    }

    private let records = Mutex<[Record]>([])

    /// A new, empty capture.
    public init() {}

    /// Everything logged so far, in order.
    public var all: [Record] { records.withLock { $0 } }

    /// Adds a record (the handler's entry point).
    public func append(_ record: Record) {
        records.withLock { $0.append(record) }
    }

    /// A logger at `trace` level writing into this capture.
    public func logger(label: String = "test") -> Logger {
        Logger(label: label) { _ in CapturingLogHandler(capture: self) }
    }
}

/// A `LogHandler` that appends to a `LogCapture`.
public struct CapturingLogHandler: LogHandler {
    let capture: LogCapture
    /// The logger's metadata.
    public var metadata: Logger.Metadata = [:]
    /// Everything from `trace` on is captured.
    public var logLevel: Logger.Level = .trace

    /// The logger's metadata value for `key`.
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Appends the event to the capture.
    public func log(event: LogEvent) {
        var flattened: [String: String] = [:]
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) {
            flattened[key] = "\(value)"
        }
        capture.append(.init(level: event.level, message: "\(event.message)", metadata: flattened))
    }
}
