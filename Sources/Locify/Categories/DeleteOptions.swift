import FoundationEssentials
import LocifyRules
import Primitives

/// The optional parts of a delete (openapi.yaml): the client's `updated_at` and, for a
/// category, `reassign_category_id`.
public struct DeleteOptions: Sendable, Equatable {
    /// The client's `updated_at` for the delete; the server's time when absent.
    public var updatedAt: Timestamp?
    /// For a category: where its locations move instead of being deleted with it.
    public var reassignCategoryID: UUID?

    /// Options of a delete; none means "now" and, for a category, delete its locations too.
    public init(updatedAt: Timestamp? = nil, reassignCategoryID: UUID? = nil) {
        self.updatedAt = updatedAt
        self.reassignCategoryID = reassignCategoryID
    }
}
