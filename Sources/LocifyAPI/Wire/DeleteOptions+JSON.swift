import FoundationEssentials
import JSON
import Locify

extension DeleteOptions {
    /// Reads the options from an optional JSON body (which must be an object) and the query
    /// items (the first value of a repeated one, as for every query parameter); a field in the
    /// body wins over the same field in the query.
    package init(body: JSONValue?, query: [(name: String, value: String)]) throws(RequestDecodingError) {
        let fields = try body.map { (body) throws(RequestDecodingError) in try FieldReader(body: body) }
        func text(_ field: String) throws(RequestDecodingError) -> String? {
            if let value = try fields?.optionalString(field) { return value }
            return QueryParameters(items: query).string(field)
        }
        let updatedAt = try text("updated_at").map { (text) throws(RequestDecodingError) in
            try FieldReader.timestamp(text, field: "updated_at")
        }
        let reassignCategoryID = try text("reassign_category_id").map { (text) throws(RequestDecodingError) in
            try FieldReader.uuid(text, field: "reassign_category_id")
        }
        self.init(updatedAt: updatedAt, reassignCategoryID: reassignCategoryID)
    }
}
