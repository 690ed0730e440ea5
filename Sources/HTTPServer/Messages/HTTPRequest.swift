/// A complete request as the parser delivered it: request line, header fields, the decoded body
/// (chunked coding removed) and any trailer fields.
public struct HTTPRequest: Sendable, Equatable {
    /// The method token, case-sensitive.
    public var method: HTTPMethod
    /// The request-target exactly as received (origin-form, absolute-form or `*`).
    public var target: String
    /// The path of the target, raw (not percent-decoded); for absolute-form the path of the URI
    /// (`/` when it has none); `*` for the asterisk-form.
    public var path: String
    /// The raw query string without its `?`; nil when the target has no `?`.
    public var query: String?
    /// The protocol version of the request line.
    public var version: HTTPVersion
    /// The header fields in arrival order.
    public var headers: HTTPHeaders
    /// The body bytes (empty when the request has none).
    public var body: [UInt8]
    /// Trailer fields received after a chunked body. Kept apart from `headers` so a trailer can
    /// never pose as a header the application trusts (RFC 9110 6.5.1).
    public var trailers: HTTPHeaders

    /// Creates a request; the server builds these, tests and applications may too.
    public init(
        method: HTTPMethod,
        target: String,
        path: String? = nil,
        query: String? = nil,
        version: HTTPVersion = .http1_1,
        headers: HTTPHeaders = [:],
        body: [UInt8] = [],
        trailers: HTTPHeaders = [:]
    ) {
        self.method = method
        self.target = target
        if let path {
            self.path = path
            self.query = query
        } else if let questionMark = target.utf8.firstIndex(of: UInt8(ascii: "?")) {
            self.path = String(target[..<questionMark])
            self.query = String(target[target.utf8.index(after: questionMark)...])
        } else {
            self.path = target
            self.query = query
        }
        self.version = version
        self.headers = headers
        self.body = body
        self.trailers = trailers
    }

    /// The query parameters in order: split on `&`, then on the first `=`; names and values are
    /// percent-decoded with `+` read as a space; invalid `%` escapes are kept literally; empty
    /// pieces (`a=1&&b=2`) are skipped. A name without `=` has the value `""`.
    public var queryItems: [(name: String, value: String)] {
        guard let query, !query.isEmpty else { return [] }
        var items: [(name: String, value: String)] = []
        for piece in query.utf8.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            if let equals = piece.firstIndex(of: UInt8(ascii: "=")) {
                let name = PercentDecoding.decodeQueryComponent(piece[..<equals])
                let value = PercentDecoding.decodeQueryComponent(piece[piece.index(after: equals)...])
                items.append((name: name, value: value))
            } else {
                items.append((name: PercentDecoding.decodeQueryComponent(piece), value: ""))
            }
        }
        return items
    }

    /// The first query parameter named `name` (percent-decoded), or nil.
    public func queryItem(_ name: String) -> String? {
        queryItems.first { $0.name == name }?.value
    }

    /// True when the client asked to keep the connection open after this request: HTTP/1.1 unless
    /// `Connection: close`; HTTP/1.0 only with `Connection: keep-alive` (RFC 9112 9.3).
    public var wantsKeepAlive: Bool {
        if headers.containsToken("close", in: "Connection") { return false }
        if version == .http1_0 { return headers.containsToken("keep-alive", in: "Connection") }
        return version == .http1_1
    }
}
