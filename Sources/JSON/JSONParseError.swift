/// Why a document is not acceptable JSON, and the byte offset where that was noticed.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Byte offset into the input where the problem was detected.
    public let offset: Int
    /// A short human-readable reason, e.g. "trailing comma".
    public let reason: String

    /// An error `reason` at byte `offset` of the input.
    public init(offset: Int, reason: String) {
        self.offset = offset
        self.reason = reason
    }

    /// Where and why, e.g. `invalid JSON at byte 4: duplicate key`.
    public var description: String { "invalid JSON at byte \(offset): \(reason)" }
}
