import FoundationEssentials
import JSON
import Locify

/// One change of a `POST /v1/sync/push` body as the API read it: the raw `type` and `id` its
/// result echoes (a wire concern: the domain's `PushChange` carries typed values only), and the
/// write it asks for, or why it cannot be read, which fails this change alone.
package struct PushedChange: Sendable, Equatable {
    /// The change's `type` as sent (nil when absent or not a string), echoed in its result.
    package var type: String?
    /// The change's `data.id` as reported in its result (lower-case when it is a UUID).
    package var id: String?
    /// The write, or the error its result reports (E001-E004, E006).
    package var change: Result<PushChange, RequestDecodingError>

    /// A change as read from the push body.
    package init(type: String?, id: String?, change: Result<PushChange, RequestDecodingError>) {
        self.type = type
        self.id = id
        self.change = change
    }

    /// Decodes the body of `POST /v1/sync/push` (openapi.yaml): its changes; throws when the batch
    /// itself is malformed (a change that is malformed fails only its own result).
    package static func batch(json body: JSONValue, userID: String) throws(RequestDecodingError) -> [PushedChange] {
        guard case .object(let object) = body else { throw .invalid("body", "must be a JSON object") }
        switch object["changes"] {
        case .array(let elements)?: return elements.map { PushedChange(json: $0, userID: userID) }
        case nil, .null?: throw .missingField("changes")
        default: throw .invalid("changes", "must be an array")
        }
    }

    /// Decodes one change `{"type", "action", "data"}`. Whatever is wrong with it becomes its
    /// failure, reported in its own result: first the `type`, then the `action`, then `data`,
    /// then the draft or delete the data describes.
    package init(json value: JSONValue, userID: String) {
        guard case .object(let change) = value else {
            self.init(type: nil, id: nil, change: .failure(.invalid("changes", "every change must be an object")))
            return
        }
        let type = change["type"]?.stringValue
        var data: JSONObject?
        var problem: RequestDecodingError?
        switch change["data"] {
        case .object(let object)?: data = object
        case nil, .null?: problem = .missingField("data")
        default: problem = .invalid("data", "must be an object")
        }
        let action = change["action"]?.stringValue.flatMap(Action.init(rawValue:))
        if action == nil { problem = .invalid("action", "must be create, update, patch or delete") }
        let kind = type.flatMap(RecordKind.init(wireName:))
        if kind == nil { problem = .invalid("type", "must be category or location") }
        // The id to report: lower-case when it is a UUID, as sent otherwise.
        let id = data?["id"]?.stringValue.map { text in UUID(apiString: text)?.lowercasedString ?? text }
        if let problem {
            self.init(type: type, id: id, change: .failure(problem))
        } else if let kind, let action, let data {
            self.init(type: type, id: id, change: Self.change(kind, action, data, userID: userID))
        } else {
            self.init(type: type, id: id, change: .failure(.invalid("changes", "is malformed")))
        }
    }

    private enum Action: String {
        case create, update, patch, delete
    }

    private static func change(_ kind: RecordKind, _ action: Action, _ data: JSONObject, userID: String)
        -> Result<PushChange, RequestDecodingError>
    {
        let body = JSONValue.object(data)
        do throws(RequestDecodingError) {
            switch (kind, action) {
            case (.category, .create): return .success(.createCategory(try CategoryDraft(json: body, userID: userID)))
            case (.category, .update): return .success(.updateCategory(try CategoryDraft(json: body, userID: userID)))
            case (.location, .create): return .success(.createLocation(try LocationDraft(json: body, userID: userID)))
            case (.location, .update): return .success(.updateLocation(try LocationDraft(json: body, userID: userID)))
            case (.category, .patch): return .success(.patchCategory(try CategoryPatch(json: body, userID: userID)))
            case (.location, .patch): return .success(.patchLocation(try LocationPatch(json: body, userID: userID)))
            case (.category, .delete):
                let (id, options) = try deletion(data)
                return .success(.deleteCategory(id: id, options))
            case (.location, .delete):
                let (id, options) = try deletion(data)
                return .success(.deleteLocation(id: id, options))
            }
        } catch {
            return .failure(error)
        }
    }

    /// The id and options of a pushed delete.
    private static func deletion(_ data: JSONObject) throws(RequestDecodingError) -> (UUID, DeleteOptions) {
        let id = try FieldReader(data).requiredUUID("id")
        return (id, try DeleteOptions(body: .object(data), query: []))
    }
}
