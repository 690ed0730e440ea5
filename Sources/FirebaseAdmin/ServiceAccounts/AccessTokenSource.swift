/// Supplies the OAuth access token sent as `Authorization: Bearer` to Google's admin APIs.
public protocol AccessTokenSource: Sendable {
    /// A currently valid access token; blocking. Failures are reported as retryable.
    func accessToken() throws -> String
}

/// A fixed access token, e.g. `owner` for the Firebase emulators.
public struct StaticAccessToken: AccessTokenSource {
    /// The token returned on every call.
    public var token: String

    /// A source that always answers `token`.
    public init(_ token: String) {
        self.token = token
    }

    /// The fixed token.
    public func accessToken() throws -> String { token }
}
