import FoundationEssentials
import JSON
import Locify
import LocifyRules

extension LocationDraft {
    /// Decodes a location body (openapi.yaml) into a draft the domain validates.
    /// Each field's shared rule (`LocationRules`) is applied as the field is read, so the first problem reported is
    /// the first in field order (id, user_id, category_id, name, address, description, latitude,
    /// longitude, is_favorite, image_urls, sync_status, created_at, updated_at).
    /// - Parameter pathID: the id from `PUT /v1/locations/{id}`; the body's id is then optional
    ///   but must match (E001 otherwise).
    package init(json body: JSONValue, userID: String, pathID: UUID? = nil) throws(RequestDecodingError) {
        let fields = try FieldReader(body: body)
        let id = try fields.recordID(pathID: pathID)
        try fields.checkUserID(userID)
        let categoryID = try fields.requiredUUID("category_id")
        let name = try RequestDecodingError.applying(LocationRules.name, to: fields.requiredString("name"))
        let address = try fields.optionalString("address").flatMap { (text) throws(RequestDecodingError) in
            try RequestDecodingError.applying(LocationRules.address, to: text)
        }
        let description = try fields.optionalString("description").flatMap { (text) throws(RequestDecodingError) in
            try RequestDecodingError.applying(LocationRules.description, to: text)
        }
        let latitude = try RequestDecodingError.applying(LocationRules.latitude, to: fields.requiredNumber("latitude"))
        let longitude = try RequestDecodingError.applying(LocationRules.longitude, to: fields.requiredNumber("longitude"))
        let isFavorite = try fields.bool("is_favorite", default: false)
        let imageURLs = try RequestDecodingError.applying(LocationRules.imageURLs, to: fields.stringArray("image_urls"))
        try fields.checkSyncStatus()
        let createdAt = try fields.optionalTimestamp("created_at")
        let updatedAt = try fields.optionalTimestamp("updated_at")
        do throws(LocifyError) {
            try self.init(
                id: id, categoryID: categoryID, name: name, address: address, description: description,
                latitude: latitude, longitude: longitude, isFavorite: isFavorite, imageURLs: imageURLs,
                createdAt: createdAt, updatedAt: updatedAt)
        } catch {
            throw .refused(error)
        }
    }
}

extension LocationPatch {
    /// Decodes a `PATCH /v1/locations/{id}` body or a push `patch` change's data (openapi.yaml):
    /// the fields it has, each read and checked as a whole write reads it (`null` clears `address`
    /// and `description`), in the same order. None, or only one of `latitude` and `longitude`, is E001.
    /// - Parameter pathID: the id from the path; the body's id is then optional but must match.
    package init(json body: JSONValue, userID: String, pathID: UUID? = nil) throws(RequestDecodingError) {
        let fields = try FieldReader(body: body)
        let id = try fields.recordID(pathID: pathID)
        try fields.checkUserID(userID)
        let categoryID = try fields.ifSent("category_id") { () throws(RequestDecodingError) in try fields.requiredUUID("category_id") }
        let name = try fields.ifSent("name") { () throws(RequestDecodingError) in
            try RequestDecodingError.applying(LocationRules.name, to: fields.requiredString("name"))
        }
        let address = try fields.ifSent("address") { () throws(RequestDecodingError) in
            try fields.optionalString("address").flatMap { (text) throws(RequestDecodingError) in
                try RequestDecodingError.applying(LocationRules.address, to: text)
            }
        }
        let description = try fields.ifSent("description") { () throws(RequestDecodingError) in
            try fields.optionalString("description").flatMap { (text) throws(RequestDecodingError) in
                try RequestDecodingError.applying(LocationRules.description, to: text)
            }
        }
        let latitude = try fields.ifSent("latitude") { () throws(RequestDecodingError) in
            try RequestDecodingError.applying(LocationRules.latitude, to: fields.requiredNumber("latitude"))
        }
        let longitude = try fields.ifSent("longitude") { () throws(RequestDecodingError) in
            try RequestDecodingError.applying(LocationRules.longitude, to: fields.requiredNumber("longitude"))
        }
        let isFavorite = try fields.ifSent("is_favorite") { () throws(RequestDecodingError) in try fields.bool("is_favorite", default: false) }
        let imageURLs = try fields.ifSent("image_urls") { () throws(RequestDecodingError) in
            try RequestDecodingError.applying(LocationRules.imageURLs, to: fields.stringArray("image_urls"))
        }
        try fields.checkSyncStatus()
        let updatedAt = try fields.optionalTimestamp("updated_at")
        do throws(LocifyError) {
            try self.init(
                id: id, categoryID: categoryID, name: name, address: address, description: description, latitude: latitude,
                longitude: longitude, isFavorite: isFavorite, imageURLs: imageURLs, updatedAt: updatedAt)
        } catch {
            throw .refused(error)
        }
    }
}
