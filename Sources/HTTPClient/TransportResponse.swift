/// The answer to a `TransportRequest`.
public struct TransportResponse: Sendable {
    /// The HTTP status code.
    public var status: Int
    /// The reason phrase of the status line (empty when the server sent none).
    public var reason: String
    /// Header fields in order.
    public var headers: [(String, String)]
    /// The body bytes.
    public var body: [UInt8]

    /// A response with status, reason phrase, header fields and body.
    public init(status: Int, reason: String = "", headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body
    }

    /// The first value of header `name`, compared case-insensitively.
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.0.lowercased() == wanted }?.1
    }
}
