/// The identity a verified Firebase ID token vouches for.
public struct VerifiedIDToken: Sendable, Equatable {
    /// The Firebase user id (the token's `sub`).
    public var uid: String
    /// The `email` claim, when present and a string.
    public var email: String?
    /// The `name` claim, when present and a string.
    public var name: String?
    /// `iat`, in unix seconds.
    public var issuedAt: Int64
    /// `exp`, in unix seconds.
    public var expiresAt: Int64
    /// `auth_time`, in unix seconds, when present.
    public var authTime: Int64?

    /// A token's claims (times in unix seconds).
    public init(uid: String, email: String?, name: String?, issuedAt: Int64, expiresAt: Int64, authTime: Int64?) {
        self.uid = uid
        self.email = email
        self.name = name
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.authTime = authTime
    }
}
