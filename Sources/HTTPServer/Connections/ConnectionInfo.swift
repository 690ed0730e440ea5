/// Facts about the connection a request arrived on, for logs and rate limiting.
public struct ConnectionInfo: Sendable, Hashable {
    /// A number unique to this connection within the server's lifetime.
    public let id: UInt64
    /// The peer as `address:port` (`[v6 address]:port` for IPv6).
    public let remoteAddress: String
    /// The peer's key in per-client limits (`ClientAddress.key`): its IPv4 address or IPv6 /64.
    public let clientAddress: String

    /// Creates connection facts (the server does; tests may).
    public init(id: UInt64, remoteAddress: String) {
        self.init(id: id, remoteAddress: remoteAddress, clientAddress: ClientAddress.key(remoteAddress))
    }

    init(id: UInt64, remoteAddress: String, clientAddress: String) {
        self.id = id
        self.remoteAddress = remoteAddress
        self.clientAddress = clientAddress
    }
}
