import FoundationEssentials
import JSON
import Locify

extension PushChange {
    /// Decodes the body of `POST /v1/sync/push` (openapi.yaml): its changes; throws when the batch
    /// itself is malformed (a change that is malformed fails only its own result).
    package static func batch(json body: JSONValue, userID: String) throws(LocifyError) -> [PushChange] {
        guard case .object(let object) = body else { throw .invalid("body", "must be a JSON object") }
        switch object["changes"] {
        case .array(let elements)?: return elements.map { PushChange(json: $0, userID: userID) }
        case nil, .null?: throw .missingField("changes")
        default: throw .invalid("changes", "must be an array")
        }
    }

    /// Decodes one change `{"type", "action", "data"}`. Whatever is wrong with it becomes its
    /// operation's failure, reported in its own result: first the `type`, then the `action`,
    /// then `data`, then the draft or delete the data describes.
    package init(json value: JSONValue, userID: String) {
        guard case .object(let change) = value else {
            self.init(type: nil, id: nil, operation: .failure(.invalid("changes", "every change must be an object")))
            return
        }
        let type = change["type"]?.stringValue
        var data: JSONObject?
        var problem: LocifyError?
        switch change["data"] {
        case .object(let object)?: data = object
        case nil, .null?: problem = .missingField("data")
        default: problem = .invalid("data", "must be an object")
        }
        let action = change["action"]?.stringValue.flatMap(Action.init(rawValue:))
        if action == nil { problem = .invalid("action", "must be create, update or delete") }
        let kind = type.flatMap(RecordKind.init(name:))
        if kind == nil { problem = .invalid("type", "must be category or location") }
        // The id to report: lower-case when it is a UUID, as sent otherwise.
        let id = data?["id"]?.stringValue.map { text in UUID(apiString: text)?.lowercasedString ?? text }
        if let problem {
            self.init(type: type, id: id, operation: .failure(problem))
        } else if let kind, let action, let data {
            self.init(type: type, id: id, operation: Self.operation(kind, action, data, userID: userID))
        } else {
            self.init(type: type, id: id, operation: .failure(.invalid("changes", "is malformed")))
        }
    }

    private enum Action: String {
        case create, update, delete
    }

    private static func operation(_ kind: RecordKind, _ action: Action, _ data: JSONObject, userID: String)
        -> Result<Operation, LocifyError>
    {
        let body = JSONValue.object(data)
        do throws(LocifyError) {
            switch (kind, action) {
            case (.category, .create): return .success(.createCategory(try CategoryDraft(json: body, userID: userID)))
            case (.category, .update): return .success(.updateCategory(try CategoryDraft(json: body, userID: userID)))
            case (.location, .create): return .success(.createLocation(try LocationDraft(json: body, userID: userID)))
            case (.location, .update): return .success(.updateLocation(try LocationDraft(json: body, userID: userID)))
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
    private static func deletion(_ data: JSONObject) throws(LocifyError) -> (UUID, DeleteOptions) {
        let id = try FieldReader(data).requiredUUID("id")
        return (id, try DeleteOptions(body: .object(data), query: []))
    }
}
