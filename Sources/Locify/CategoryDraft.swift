import Foundation
import JSON

/// A validated category write (create, upsert or replace) as the client sent it, normalised.
public struct CategoryDraft: Sendable, Equatable {
    /// The client-chosen id.
    public var id: UUID
    /// The display name, trimmed.
    public var name: String
    /// The icon's Firebase Storage URL, if any.
    public var icon: String?
    /// Sent `created_at` (create only), not yet clamped.
    public var createdAt: Timestamp?
    /// Sent `updated_at`, not yet clamped.
    public var updatedAt: Timestamp?

    /// A draft from already-validated values.
    public init(id: UUID, name: String, icon: String? = nil, createdAt: Timestamp? = nil, updatedAt: Timestamp? = nil) {
        self.id = id
        self.name = name
        self.icon = icon
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// Decodes and validates a category body (API.md sections 4 and 11).
    /// - Parameter pathID: the id from `PUT /v1/categories/{id}`; the body's id is then optional
    ///   but must match (E001 otherwise).
    public init(json body: JSONValue, userID: String, pathID: UUID? = nil) throws(LocifyError) {
        let fields = try FieldReader(body: body)
        id = try fields.recordID(pathID: pathID)
        try fields.checkUserID(userID)
        name = try TextRules.name(fields.requiredString("name"), field: "name")
        if let icon = try fields.optionalString("icon") {
            self.icon = try TextRules.httpsURL(icon, field: "icon")
        }
        try fields.checkSyncStatus()
        createdAt = try fields.optionalTimestamp("created_at")
        updatedAt = try fields.optionalTimestamp("updated_at")
    }

    /// Whether this write carries the same editable content as `stored` (idempotent replay test).
    public func hasSameContent(as stored: Category) -> Bool {
        name == stored.name && icon == stored.icon
    }
}

extension FieldReader {
    /// The record id of a write: from the path when given (a differing body id is E001), else
    /// the required body `id`.
    func recordID(pathID: UUID?) throws(LocifyError) -> UUID {
        guard let pathID else { return try requiredUUID("id") }
        if let bodyID = try optionalUUID("id"), bodyID != pathID {
            throw .invalid("id", "must match the id in the path")
        }
        return pathID
    }
}
