/// The authenticated user a request acts for, as established from a verified ID token.
public struct Caller: Sendable, Equatable {
    /// The token's `sub`: the user id every record is scoped to.
    public var userID: String
    /// The token's `email` claim, used when the account is provisioned.
    public var email: String?
    /// The token's `name` claim, used when the account is provisioned.
    public var name: String?
    /// The token's `iat` (unix seconds): tokens issued at or before an account deletion are refused.
    public var tokenIssuedAt: Int64

    /// The caller of a verified token: its uid (`sub`), profile claims and `iat` (unix seconds).
    public init(userID: String, email: String? = nil, name: String? = nil, tokenIssuedAt: Int64) {
        self.userID = userID
        self.email = email
        self.name = name
        self.tokenIssuedAt = tokenIssuedAt
    }
}
