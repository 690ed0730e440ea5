/// Facts about the connection a request arrived on, for logs and rate limiting.
public struct ConnectionInfo: Sendable, Hashable {
    /// A number unique to this connection within the server's lifetime.
    public let id: UInt64
    /// The peer as `address:port` (`[v6 address]:port` for IPv6).
    public let remoteAddress: String

    /// Creates connection facts (the server does; tests may).
    public init(id: UInt64, remoteAddress: String) {
        self.id = id
        self.remoteAddress = remoteAddress
    }
}
