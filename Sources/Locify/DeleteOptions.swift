import Foundation

/// The optional parts of a delete (API.md section 5): the client's `updated_at` and, for a
/// category, `reassign_category_id`.
public struct DeleteOptions: Sendable, Equatable {
    public var updatedAt: Timestamp?
    public var reassignCategoryID: UUID?

    public init(updatedAt: Timestamp? = nil, reassignCategoryID: UUID? = nil) {
        self.updatedAt = updatedAt
        self.reassignCategoryID = reassignCategoryID
    }
}
