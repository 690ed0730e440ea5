import FoundationEssentials
import Glibc
import JSON
import LocifyAPI
import LocifyRules
import Logging
import Primitives

/// A swift-log handler writing one JSON object per line to stdout: `ts`, `level`, `msg`, then
/// the metadata as top-level fields (for request logs: `request_id`, `method`, `route`,
/// `status`, `duration_ms`, `user_id`, openapi.yaml). Lines are written with one `write(2)`
/// each, so lines from different threads never interleave and nothing is lost in a buffer.
public struct JSONLogHandler: LogHandler {
    /// Metadata added to every line of this handler.
    public var metadata: Logger.Metadata = [:]
    /// Lines below this level are dropped.
    public var logLevel: Logger.Level
    private let label: String
    private let output: @Sendable ([UInt8]) -> Void
    private let clock: WallClock

    /// - Parameters:
    ///   - clock: dates each line's `ts` (the server's wall clock).
    ///   - output: receives each finished line (newline included). Default: one `write(2)` to
    ///     standard output; tests pass a collector.
    public init(
        label: String, level: Logger.Level = .info, clock: WallClock = .system,
        output: @escaping @Sendable ([UInt8]) -> Void = JSONLogHandler.writeToStandardOutput
    ) {
        self.label = label
        self.logLevel = level
        self.clock = clock
        self.output = output
    }

    /// One metadata value of this handler.
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Writes the event as one JSON line.
    public func log(event: LogEvent) {
        var writer = JSONWriter(reservingCapacity: 320)
        writer.beginObject()
        writer.key("ts")
        writer.timestamp(clock.now())
        writer.key("level")
        writer.string(event.level.rawValue)
        writer.key("msg")
        writer.string(event.message.description)
        writer.key("logger")
        writer.string(label)
        var fields = event.metadata ?? [:]
        if !metadata.isEmpty { fields.merge(metadata) { explicit, _ in explicit } }
        if let error = event.error { fields["error"] = "\(error)" }
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
            writer.key(key)
            Self.write(value, into: &writer)
        }
        writer.endObject()
        writer.bytes.append(0x0A)
        output(writer.bytes)
    }

    /// Writes `line` to file descriptor 1: one `write(2)`, repeated only after a short write.
    @Sendable public static func writeToStandardOutput(_ line: [UInt8]) {
        line.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(1, buffer.baseAddress.map { $0 + offset }, buffer.count - offset)
                if written <= 0 { return }
                offset += written
            }
        }
    }

    /// Strings stay strings (a numeric user id is still a string); numbers and booleans logged as
    /// `.stringConvertible` are written as JSON numbers and booleans.
    private static func write(_ value: Logger.Metadata.Value, into writer: inout JSONWriter) {
        switch value {
        case .string(let text):
            writer.string(text)
        case .stringConvertible(let convertible):
            switch convertible {
            case let number as Int: writer.int(number)
            case let number as Int64: writer.int64(number)
            case let number as Double where number.isFinite: writer.double(number)
            case let flag as Bool: writer.bool(flag)
            default: writer.string(convertible.description)
            }
        case .array(let values):
            writer.beginArray()
            for element in values { write(element, into: &writer) }
            writer.endArray()
        case .dictionary(let dictionary):
            writer.beginObject()
            for (key, element) in dictionary.sorted(by: { $0.key < $1.key }) {
                writer.key(key)
                write(element, into: &writer)
            }
            writer.endObject()
        }
    }
}
