import FoundationEssentials
import Postgres

/// Batch sync (openapi.yaml): push applies a batch of offline changes one by one through the
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

/// One change of a push batch as the API layer decoded it: the write to apply, or why it cannot
/// be applied (a malformed envelope or a draft that breaks a rule), which fails this change alone.
public struct PushChange: Sendable, Equatable {
    /// The write a well-formed change asks for.
    public enum Operation: Sendable, Equatable {
        case createCategory(CategoryDraft)
        case updateCategory(CategoryDraft)
        case deleteCategory(id: UUID, DeleteOptions)
        case createLocation(LocationDraft)
        case updateLocation(LocationDraft)
        case deleteLocation(id: UUID, DeleteOptions)
    }

    /// The change's `type` as sent (nil when absent or not a string), echoed in its result.
    public var type: String?
    /// The change's `data.id` as reported in its result (lower-case when it is a UUID).
    public var id: String?
    /// The write, or the error its result reports (E001-E004, E006).
    public var operation: Result<Operation, LocifyError>

    /// A decoded change as the API layer read it from the push body.
    public init(type: String?, id: String?, operation: Result<Operation, LocifyError>) {
        self.type = type
        self.id = id
        self.operation = operation
    }

    /// The order group of openapi.yaml: category creates and updates, then every location
    /// change, then category deletes. Changes that cannot be applied go first; they only report
    /// their error.
    var group: Int {
        switch operation {
        case .failure: return 0
        case .success(.createCategory), .success(.updateCategory): return 1
        case .success(.createLocation), .success(.updateLocation), .success(.deleteLocation): return 2
        case .success(.deleteCategory): return 3
        }
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

        /// Whether the change's write transaction ran (and so did the account gate).
        var passedGate: Bool {
            if case .failed = self { return false }
            return true
        }
    }

    /// The change's `type` as sent (nil when absent or not a string).
    public var type: String?
    /// The change's `data.id`, lower-case when it is a UUID.
    public var id: String?
    /// Applied, conflict or failed.
    public var outcome: Outcome
}

extension SyncService {
    /// Applies a push batch as the API layer decoded it. The whole request fails only when the
    /// batch is too large (nothing is applied then), when the token is refused, or when the
    /// database fails; a bad change only fails its own result.
    public func push(_ caller: Caller, _ changes: [PushChange]) throws -> [PushResult] {
        try checkBatchSize(changes.count)
        var outcomes = [PushResult.Outcome?](repeating: nil, count: changes.count)
        let order = changes.indices.sorted { (changes[$0].group, $0) < (changes[$1].group, $1) }
        for index in order {
            outcomes[index] = try apply(changes[index].operation, caller)
        }
        // Every applied change (or conflict) passed the account gate in its transaction. A push
        // none of whose changes did (an empty batch, every change refused) runs it alone, so a
        // revoked token is E005 rather than a 200 of per-change errors, and a new user is
        // provisioned (openapi.yaml).
        if !outcomes.contains(where: { $0?.passedGate ?? false }) {
            try pool.withConnection { connection in try AccountGate.admit(connection, caller, now: categories.now) }
        }
        return changes.indices.map { index in
            PushResult(
                type: changes[index].type, id: changes[index].id,
                outcome: outcomes[index] ?? .failed(.invalid("changes", "was not applied")))
        }
    }

    /// Refuses a batch of more than `maxPushChanges` changes (E001): the API checks it while
    /// decoding the request, before any change is applied.
    public func checkBatchSize(_ count: Int) throws(LocifyError) {
        if count > maxPushChanges {
            throw .invalid("changes", "must hold at most \(maxPushChanges) changes")
        }
    }

    private func apply(_ operation: Result<PushChange.Operation, LocifyError>, _ caller: Caller) throws -> PushResult.Outcome {
        let write: PushChange.Operation
        switch operation {
        case .success(let operation): write = operation
        case .failure(let error): return .failed(error)
        }
        do {
            return .applied(try apply(write, caller))
        } catch LocifyError.conflict(let state) {
            return .conflict(state)
        } catch let error as LocifyError where error.belongsToOneChange {
            return .failed(error)
        }
    }

    private func apply(_ operation: PushChange.Operation, _ caller: Caller) throws -> RecordState {
        switch operation {
        case .createCategory(let draft):
            return .category(try categories.create(caller, draft).record)
        case .updateCategory(let draft):
            return .category(try categories.replace(caller, draft).record)
        case .createLocation(let draft):
            return .location(try locations.create(caller, draft).record)
        case .updateLocation(let draft):
            return .location(try locations.replace(caller, draft).record)
        case .deleteCategory(let id, let options):
            return try categories.delete(
                caller, id: id, updatedAt: options.updatedAt, reassignTo: options.reassignCategoryID
            ).state
        case .deleteLocation(let id, let options):
            return try locations.delete(caller, id: id, updatedAt: options.updatedAt).state
        }
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
