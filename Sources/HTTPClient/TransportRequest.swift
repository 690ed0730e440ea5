/// One outgoing HTTP request to a Google endpoint (or a fake of it).
public struct TransportRequest: Sendable {
    /// The method, e.g. `GET`.
    public var method: String
    /// The absolute URL, already percent-encoded.
    public var url: String
    /// Header fields in order.
    public var headers: [(String, String)]
    /// The body bytes (empty for none).
    public var body: [UInt8]
    /// Per-request timeout in seconds; nil uses the transport's default.
    public var timeout: Double?

    /// A request; `timeout` in seconds, nil for the transport's default.
    public init(method: String, url: String, headers: [(String, String)] = [], body: [UInt8] = [], timeout: Double? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }
}
