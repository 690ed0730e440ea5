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

    public init(method: String, url: String, headers: [(String, String)] = [], body: [UInt8] = [], timeout: Double? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }
}

/// The answer to a `TransportRequest`.
public struct TransportResponse: Sendable {
    /// The HTTP status code.
    public var status: Int
    /// Header fields in order.
    public var headers: [(String, String)]
    /// The body bytes.
    public var body: [UInt8]

    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first value of header `name`, compared case-insensitively.
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.0.lowercased() == wanted }?.1
    }
}

/// The request never got an HTTP answer (connection refused, DNS, timeout, ...).
public struct TransportError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public var message: String
    /// Whether the request timed out.
    public var isTimeout: Bool

    public init(_ message: String, isTimeout: Bool = false) {
        self.message = message
        self.isTimeout = isTimeout
    }

    public var description: String { message }
}
