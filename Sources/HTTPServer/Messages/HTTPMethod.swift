/// An HTTP request method: a case-sensitive token (RFC 9110 9.1). A struct rather than an enum so
/// unknown but well-formed methods reach the application, which answers them with 405 or 501.
public struct HTTPMethod: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The method token exactly as received, e.g. `"GET"`.
    public let rawValue: String

    /// Wraps a method token. The parser only produces valid tokens; this initializer does not check.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// The method token as sent.
    public var description: String { rawValue }

    /// The `GET` method.
    public static let GET = HTTPMethod(rawValue: "GET")
    /// The `HEAD` method.
    public static let HEAD = HTTPMethod(rawValue: "HEAD")
    /// The `POST` method.
    public static let POST = HTTPMethod(rawValue: "POST")
    /// The `PUT` method.
    public static let PUT = HTTPMethod(rawValue: "PUT")
    /// The `DELETE` method.
    public static let DELETE = HTTPMethod(rawValue: "DELETE")
    /// The `PATCH` method.
    public static let PATCH = HTTPMethod(rawValue: "PATCH")
    /// The `OPTIONS` method.
    public static let OPTIONS = HTTPMethod(rawValue: "OPTIONS")
    /// The `CONNECT` method.
    public static let CONNECT = HTTPMethod(rawValue: "CONNECT")
    /// The `TRACE` method.
    public static let TRACE = HTTPMethod(rawValue: "TRACE")
}

extension HTTPMethod: Comparable {
    /// Orders methods by their token, so lists such as an `Allow` header are stable.
    public static func < (lhs: HTTPMethod, rhs: HTTPMethod) -> Bool {
        lhs.rawValue < rhs.rawValue
    }
}
