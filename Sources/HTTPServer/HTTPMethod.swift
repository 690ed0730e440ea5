/// An HTTP request method: a case-sensitive token (RFC 9110 9.1). A struct rather than an enum so
/// unknown but well-formed methods reach the application, which answers them with 405 or 501.
public struct HTTPMethod: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The method token exactly as received, e.g. `"GET"`.
    public let rawValue: String

    /// Wraps a method token. The parser only produces valid tokens; this initializer does not check.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    public var description: String { rawValue }

    public static let GET = HTTPMethod(rawValue: "GET")
    public static let HEAD = HTTPMethod(rawValue: "HEAD")
    public static let POST = HTTPMethod(rawValue: "POST")
    public static let PUT = HTTPMethod(rawValue: "PUT")
    public static let DELETE = HTTPMethod(rawValue: "DELETE")
    public static let PATCH = HTTPMethod(rawValue: "PATCH")
    public static let OPTIONS = HTTPMethod(rawValue: "OPTIONS")
    public static let CONNECT = HTTPMethod(rawValue: "CONNECT")
    public static let TRACE = HTTPMethod(rawValue: "TRACE")
}

extension HTTPMethod: Comparable {
    /// Orders methods by their token, so lists such as an `Allow` header are stable.
    public static func < (lhs: HTTPMethod, rhs: HTTPMethod) -> Bool {
        lhs.rawValue < rhs.rawValue
    }
}
