/// The request never got an HTTP answer (connection refused, DNS, timeout, ...).
public struct TransportError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public var message: String
    /// Whether the request timed out.
    public var isTimeout: Bool

    /// A failure `message`; `isTimeout` when the request ran out of time.
    public init(_ message: String, isTimeout: Bool = false) {
        self.message = message
        self.isTimeout = isTimeout
    }

    /// The message.
    public var description: String { message }
}
