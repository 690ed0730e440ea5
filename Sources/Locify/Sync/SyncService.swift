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

/// One write of a push batch, in typed values (the API layer decodes it, and keeps what it echoes
/// of the raw change to itself).
public enum PushChange: Sendable, Equatable {
    case createCategory(CategoryDraft)
    case updateCategory(CategoryDraft)
    case deleteCategory(id: UUID, DeleteOptions)
    case createLocation(LocationDraft)
    case updateLocation(LocationDraft)
    case deleteLocation(id: UUID, DeleteOptions)

    /// The order group of openapi.yaml: category creates and updates, then every location
    /// change, then category deletes.
    var group: Int {
        switch self {
        case .createCategory, .updateCategory: return 1
        case .createLocation, .updateLocation, .deleteLocation: return 2
        case .deleteCategory: return 3
        }
    }
}

/// What became of one pushed change.
public enum PushOutcome: Sendable {
    /// Applied (or replayed): the record, or the tombstone of a delete.
    case applied(RecordState)
    /// Lost to a newer server version (E008): the server's record or tombstone.
    case conflict(RecordState)
    /// Refused; the error says why (E001, E003, E007).
    case failed(LocifyError)

    /// Whether the change's write transaction ran (and so did the account gate).
    var passedGate: Bool {
        if case .failed = self { return false }
        return true
    }
}

extension SyncService {
    /// Applies the well-formed changes of a push batch (the API layer answers the malformed ones
    /// itself), returning their outcomes in the order given. The whole request fails only when
    /// the batch is too large (nothing is applied then), when the token is refused, or when the
    /// database fails; a change the domain refuses only fails its own outcome.
    public func push(_ caller: Caller, _ changes: [PushChange]) throws -> [PushOutcome] {
        try checkBatchSize(changes.count)
        var outcomes = [PushOutcome?](repeating: nil, count: changes.count)
        let order = changes.indices.sorted { (changes[$0].group, $0) < (changes[$1].group, $1) }
        for index in order {
            outcomes[index] = try apply(changes[index], caller)
        }
        // Every applied change (or conflict) passed the account gate in its transaction. A push
        // none of whose changes did (an empty batch, every change refused) runs it alone, so a
        // revoked token is E005 rather than a 200 of per-change errors, and a new user is
        // provisioned (openapi.yaml).
        if !outcomes.contains(where: { $0?.passedGate ?? false }) {
            try pool.withConnection { connection in try AccountGate.admit(connection, caller, now: categories.now) }
        }
        // `order` holds every index once, so every change has its outcome.
        return outcomes.compactMap { $0 }
    }

    /// Refuses a batch of more than `maxPushChanges` changes (`tooManyChanges`): the API checks it
    /// while decoding the request, before any change is applied.
    public func checkBatchSize(_ count: Int) throws(LocifyError) {
        if count > maxPushChanges { throw .tooManyChanges(limit: maxPushChanges) }
    }

    private func apply(_ change: PushChange, _ caller: Caller) throws -> PushOutcome {
        do {
            return .applied(try write(change, caller))
        } catch LocifyError.conflict(let state) {
            return .conflict(state)
        } catch let error as LocifyError where error.belongsToOneChange {
            return .failed(error)
        }
    }

    private func write(_ change: PushChange, _ caller: Caller) throws -> RecordState {
        switch change {
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
        case .tokenRevoked, .cursorExpired, .tooManyChanges: return false
        default: return true
        }
    }
}
