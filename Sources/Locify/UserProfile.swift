/// The caller's profile as `GET /v1/users/me` returns it (API.md section 8).
public struct UserProfile: Sendable, Equatable {
    public var id: String
    public var email: String?
    public var name: String?
    public var createdAt: Timestamp
    public var updatedAt: Timestamp
}
