/// Sends one HTTP request and blocks until the answer (callers are worker threads, never the
/// global Dispatch pool). Abstracted so tests route requests to an in-process fake of Google.
public protocol HTTPTransport: Sendable {
    /// Sends `request`; throws `TransportError` when no HTTP response was received.
    func send(_ request: TransportRequest) throws -> TransportResponse
}
