import FoundationEssentials
import JSON
import Locify
import LocifyRules
import Primitives

/// Reads typed fields of a JSON request object, turning each wire-format violation into its
/// decoding error (`RequestDecodingError`): absent or null required field E004, wrong type E001,
/// malformed UUID E002. The rules on the values themselves belong to the shared rules and the
/// domain (the drafts' initializers).
struct FieldReader {
    let object: JSONObject

    init(_ object: JSONObject) {
        self.object = object
    }

    /// Reads the request body as an object; anything else (array, string, ...) is E001.
    init(body: JSONValue) throws(RequestDecodingError) {
        guard case .object(let object) = body else {
            throw .invalid("body", "must be a JSON object")
        }
        self.object = object
    }

    /// The field's value; nil when absent or null.
    func value(_ field: String) -> JSONValue? {
        switch object[field] {
        case nil, .null?: return nil
        case let value?: return value
        }
    }

    /// What `read` reads of `field` when the body has the member (null included); nil when it has
    /// none: a patch's field that is not carried.
    func ifSent<T>(_ field: String, _ read: () throws(RequestDecodingError) -> T) throws(RequestDecodingError) -> T? {
        object[field] == nil ? nil : try read()
    }

    func requiredString(_ field: String) throws(RequestDecodingError) -> String {
        guard let value = try optionalString(field) else { throw .missingField(field) }
        return value
    }

    func optionalString(_ field: String) throws(RequestDecodingError) -> String? {
        guard let value = value(field) else { return nil }
        guard case .string(let text) = value else { throw .invalid(field, "must be a string") }
        return text
    }

    func requiredUUID(_ field: String) throws(RequestDecodingError) -> UUID {
        guard let id = try optionalUUID(field) else { throw .missingField(field) }
        return id
    }

    func optionalUUID(_ field: String) throws(RequestDecodingError) -> UUID? {
        guard let text = try optionalString(field) else { return nil }
        return try FieldReader.uuid(text, field: field)
    }

    static func uuid(_ text: String, field: String) throws(RequestDecodingError) -> UUID {
        guard let id = UUID(apiString: text) else {
            throw .invalidUUID(field)
        }
        return id
    }

    func requiredNumber(_ field: String) throws(RequestDecodingError) -> Double {
        guard let value = value(field) else { throw .missingField(field) }
        guard case .number(let number) = value else { throw .invalid(field, "must be a number") }
        return number
    }

    func bool(_ field: String, default defaultValue: Bool) throws(RequestDecodingError) -> Bool {
        guard let value = value(field) else { return defaultValue }
        guard case .bool(let flag) = value else { throw .invalid(field, "must be true or false") }
        return flag
    }

    func optionalTimestamp(_ field: String) throws(RequestDecodingError) -> Timestamp? {
        guard let text = try optionalString(field) else { return nil }
        return try FieldReader.timestamp(text, field: field)
    }

    static func timestamp(_ text: String, field: String) throws(RequestDecodingError) -> Timestamp {
        guard let timestamp = Timestamp(rfc3339: text) else {
            throw .invalid(field, "must be an RFC 3339 timestamp")
        }
        return timestamp
    }

    func stringArray(_ field: String) throws(RequestDecodingError) -> [String] {
        guard let value = value(field) else { return [] }
        guard case .array(let elements) = value else { throw .invalid(field, "must be an array of strings") }
        var strings: [String] = []
        strings.reserveCapacity(elements.count)
        for element in elements {
            guard case .string(let text) = element else { throw .invalid(field, "must be an array of strings") }
            strings.append(text)
        }
        return strings
    }

    /// The record id of a write: from the path when given (a differing body id is E001), else
    /// the required body `id`.
    func recordID(pathID: UUID?) throws(RequestDecodingError) -> UUID {
        guard let pathID else { return try requiredUUID("id") }
        if let bodyID = try optionalUUID("id"), bodyID != pathID {
            throw .invalid("id", "must match the id in the path")
        }
        return pathID
    }

    /// `user_id` is read-only: when sent it must be the caller's id (E006).
    func checkUserID(_ userID: String) throws(RequestDecodingError) {
        guard let sent = try optionalString("user_id") else { return }
        if sent != userID {
            throw .forbidden(FieldIssue(field: "user_id", message: "must be the authenticated user's id"))
        }
    }

    /// `sync_status` is accepted and ignored, but only with one of the four client values.
    func checkSyncStatus() throws(RequestDecodingError) {
        guard let status = try optionalString("sync_status") else { return }
        if !FieldReader.syncStatuses.contains(status) {
            throw .invalid("sync_status", "must be one of synced, pendingCreate, pendingUpdate, pendingDelete")
        }
    }

    private static let syncStatuses: Set<String> = ["synced", "pendingCreate", "pendingUpdate", "pendingDelete"]
}
