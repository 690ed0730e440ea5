import Foundation
import JSON
import Postgres

/// Batch sync (API.md section 7): push applies a batch of offline changes one by one through the
/// same single-record code paths as the REST endpoints; pull reads the change feed.
public struct SyncService: Sendable {
    let pool: ConnectionPool
    let categories: CategoryService
    let locations: LocationService
    /// Tombstone retention, which is also how long a cursor stays valid.
    let retentionSeconds: Int64
    /// Most changes one push may carry.
    let maxPushChanges: Int
}

/// One change of a push batch, decoded as far as it could be. Package-visible for the
/// request-decoding fuzz target.
package struct PushItem {
    package enum Action: String {
        case create, update, delete
    }

    package var typeName: String?
    package var kind: RecordKind?
    package var action: Action?
    package var data: JSONObject?
    /// Why the item cannot be applied, when its envelope is malformed.
    package var problem: LocifyError?

    package init(_ value: JSONValue) {
        guard case .object(let change) = value else {
            problem = .invalid("changes", "every change must be an object")
            return
        }
        typeName = change["type"]?.stringValue
        kind = typeName.flatMap(RecordKind.init(name:))
        action = change["action"]?.stringValue.flatMap(Action.init(rawValue:))
        switch change["data"] {
        case .object(let data)?: self.data = data
        case nil, .null?: problem = .missingField("data")
        default: problem = .invalid("data", "must be an object")
        }
        if action == nil { problem = .invalid("action", "must be create, update or delete") }
        if kind == nil { problem = .invalid("type", "must be category or location") }
    }

    /// The order group of API.md section 7: category creates and updates, then every location
    /// change, then category deletes (malformed items go first; they only report an error).
    package var group: Int {
        switch (kind, action) {
        case (.category?, .delete?): return 3
        case (.location?, _): return 2
        case (.category?, _): return 1
        default: return 0
        }
    }

    /// The id to report: lower-case when it is a UUID, as sent otherwise.
    package var reportedID: String? {
        guard let text = data?["id"]?.stringValue else { return nil }
        return UUID(apiString: text)?.lowercasedString ?? text
    }
}

/// The result of one pushed change, in the order the changes were sent.
public struct PushResult: Sendable {
    /// What became of the change.
    public enum Outcome: Sendable {
        /// Applied (or replayed): the record, or the tombstone of a delete.
        case applied(RecordState)
        /// Lost to a newer server version (E008): the server's record or tombstone.
        case conflict(RecordState)
        /// Refused; the error says why (E001-E007).
        case failed(LocifyError)
    }

    /// The change's `type` as sent (nil when absent or not a string).
    public var type: String?
    /// The change's `data.id`, lower-case when it is a UUID.
    public var id: String?
    /// Applied, conflict or failed.
    public var outcome: Outcome
}

extension SyncService {
    /// Applies a push batch. The whole request fails only when the batch itself is malformed or
    /// too large (nothing is applied then), when the token is refused, or when the database fails;
    /// a bad change only fails its own result.
    public func push(_ caller: Caller, body: JSONValue) throws -> [PushResult] {
        // The account gate once up front: a batch whose changes never reach a write transaction
        // (empty, all malformed, too large) must refuse a revoked token too (API.md section 2).
        try pool.withConnection { connection in
            try AccountGate.read(connection, caller, "SELECT tokens_valid_after FROM users WHERE id = \(caller.userID)", now: categories.now) { _ in }
        }
        guard case .object(let object) = body else { throw LocifyError.invalid("body", "must be a JSON object") }
        let elements: [JSONValue]
        switch object["changes"] {
        case .array(let array)?: elements = array
        case nil, .null?: throw LocifyError.missingField("changes")
        default: throw LocifyError.invalid("changes", "must be an array")
        }
        if elements.count > maxPushChanges {
            throw LocifyError.invalid("changes", "must hold at most \(maxPushChanges) changes")
        }
        // The account gate runs even when no change reaches the database (an empty batch, or
        // every change malformed): a revoked token is refused, a new user provisioned.
        try pool.withConnection { connection in try AccountGate.admit(connection, caller, now: categories.now) }
        let items = elements.map(PushItem.init)
        var outcomes = [PushResult.Outcome?](repeating: nil, count: items.count)
        let order = items.indices.sorted { (items[$0].group, $0) < (items[$1].group, $1) }
        for index in order {
            outcomes[index] = try apply(items[index], caller)
        }
        return items.indices.map { index in
            PushResult(
                type: items[index].typeName, id: items[index].reportedID,
                outcome: outcomes[index] ?? .failed(.invalid("changes", "was not applied")))
        }
    }

    private func apply(_ item: PushItem, _ caller: Caller) throws -> PushResult.Outcome {
        guard item.problem == nil, let kind = item.kind, let action = item.action, let data = item.data else {
            return .failed(item.problem ?? .invalid("changes", "is malformed"))
        }
        do {
            return .applied(try apply(kind, action, .object(data), caller))
        } catch LocifyError.conflict(let state) {
            return .conflict(state)
        } catch let error as LocifyError where error.belongsToOneChange {
            return .failed(error)
        }
    }

    private func apply(_ kind: RecordKind, _ action: PushItem.Action, _ data: JSONValue, _ caller: Caller) throws -> RecordState {
        let userID = caller.userID
        switch (kind, action) {
        case (.category, .create):
            return .category(try categories.create(caller, CategoryDraft(json: data, userID: userID)).record)
        case (.category, .update):
            return .category(try categories.replace(caller, CategoryDraft(json: data, userID: userID)).record)
        case (.location, .create):
            return .location(try locations.create(caller, LocationDraft(json: data, userID: userID)).record)
        case (.location, .update):
            return .location(try locations.replace(caller, LocationDraft(json: data, userID: userID)).record)
        case (.category, .delete):
            let (id, options) = try Self.deletion(data)
            return try categories.delete(
                caller, id: id, updatedAt: options.updatedAt, reassignTo: options.reassignCategoryID
            ).state
        case (.location, .delete):
            let (id, options) = try Self.deletion(data)
            return try locations.delete(caller, id: id, updatedAt: options.updatedAt).state
        }
    }

    /// The id and options of a pushed delete (package-visible for the fuzz target).
    package static func deletion(_ data: JSONValue) throws(LocifyError) -> (UUID, DeleteOptions) {
        let id = try FieldReader(body: data).requiredUUID("id")
        return (id, try DeleteOptions(body: data, query: []))
    }
}

extension LocifyError {
    /// Errors about one change of a batch; the others (a revoked token) end the whole request, as
    /// every error that is not a `LocifyError` does (a database that is down: `PostgresError`).
    var belongsToOneChange: Bool {
        switch self {
        case .tokenRevoked, .cursorExpired: return false
        default: return true
        }
    }
}
