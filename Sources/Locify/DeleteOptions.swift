import Foundation
import JSON

/// The optional parts of a delete (API.md section 5): the client's `updated_at` and, for a
/// category, `reassign_category_id`. Read from the JSON body or the query string.
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

    /// Reads the options from an optional JSON body (which must be an object) and the query
    /// items; a field in the body wins over the same field in the query.
    public init(body: JSONValue?, query: [(name: String, value: String)]) throws(LocifyError) {
        let fields = try body.map { (body) throws(LocifyError) in try FieldReader(body: body) }
        func text(_ field: String) throws(LocifyError) -> String? {
            if let value = try fields?.optionalString(field) { return value }
            return query.last(where: { $0.name == field })?.value
        }
        updatedAt = try text("updated_at").map { (text) throws(LocifyError) in try FieldReader.timestamp(text, field: "updated_at") }
        reassignCategoryID = try text("reassign_category_id").map { (text) throws(LocifyError) in
            try FieldReader.uuid(text, field: "reassign_category_id")
        }
    }
}
