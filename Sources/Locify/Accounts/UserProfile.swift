import LocifyRules
import Primitives

/// The caller's profile as `GET /v1/users/me` returns it (openapi.yaml).
public struct UserProfile: Sendable, Equatable {
    /// The Firebase uid.
    public var id: String
    /// The email claim of the latest token, if any.
    public var email: String?
    /// The display name, if any.
    public var name: String?
    /// When the account was first seen.
    public var createdAt: Timestamp
    /// The last profile change.
    public var updatedAt: Timestamp
}
