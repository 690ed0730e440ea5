import FoundationEssentials
import JSON
import Locify
import LocifyRules

extension CategoryDraft {
    /// Decodes a category body (openapi.yaml) into a draft the domain validates.
    /// Each field's shared rule (`CategoryRules`) is applied as the field is read, so the first problem reported is
    /// the first in field order (id, user_id, name, icon, sync_status, created_at, updated_at).
    /// - Parameter pathID: the id from `PUT /v1/categories/{id}`; the body's id is then optional
    ///   but must match (E001 otherwise).
    package init(json body: JSONValue, userID: String, pathID: UUID? = nil) throws(RequestDecodingError) {
        let fields = try FieldReader(body: body)
        let id = try fields.recordID(pathID: pathID)
        try fields.checkUserID(userID)
        let name = try RequestDecodingError.applying(CategoryRules.name, to: fields.requiredString("name"))
        let icon = try fields.optionalString("icon").map { (icon) throws(RequestDecodingError) in
            try RequestDecodingError.applying(CategoryRules.icon, to: icon)
        }
        try fields.checkSyncStatus()
        let createdAt = try fields.optionalTimestamp("created_at")
        let updatedAt = try fields.optionalTimestamp("updated_at")
        do throws(LocifyError) {
            try self.init(id: id, name: name, icon: icon, createdAt: createdAt, updatedAt: updatedAt)
        } catch {
            throw .refused(error)
        }
    }
}

extension CategoryPatch {
    /// Decodes a `PATCH /v1/categories/{id}` body or a push `patch` change's data (openapi.yaml):
    /// the fields it has, each read and checked as a whole write reads it (`null` clears `icon`),
    /// in the same order; none is E001.
    /// - Parameter pathID: the id from the path; the body's id is then optional but must match.
    package init(json body: JSONValue, userID: String, pathID: UUID? = nil) throws(RequestDecodingError) {
        let fields = try FieldReader(body: body)
        let id = try fields.recordID(pathID: pathID)
        try fields.checkUserID(userID)
        let name = try fields.ifSent("name") { () throws(RequestDecodingError) in
            try RequestDecodingError.applying(CategoryRules.name, to: fields.requiredString("name"))
        }
        let icon = try fields.ifSent("icon") { () throws(RequestDecodingError) in
            try fields.optionalString("icon").map { (icon) throws(RequestDecodingError) in
                try RequestDecodingError.applying(CategoryRules.icon, to: icon)
            }
        }
        try fields.checkSyncStatus()
        let updatedAt = try fields.optionalTimestamp("updated_at")
        do throws(LocifyError) {
            try self.init(id: id, name: name, icon: icon, updatedAt: updatedAt)
        } catch {
            throw .refused(error)
        }
    }
}
