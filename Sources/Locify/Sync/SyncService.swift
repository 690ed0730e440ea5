import FoundationEssentials
import Postgres

/// Batch sync (openapi.yaml): push applies a batch of offline changes one by one through the
/// same single-record code paths as the REST endpoints; pull reads the change feed.
public struct SyncService: Sendable {
    let accounts: Accounts
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
    case patchCategory(CategoryPatch)
    case deleteCategory(id: UUID, DeleteOptions)
    case createLocation(LocationDraft)
    case updateLocation(LocationDraft)
    case patchLocation(LocationPatch)
    case deleteLocation(id: UUID, DeleteOptions)

    /// The order group of openapi.yaml: category creates, updates and patches, then every
    /// location change, then category deletes.
    var group: Int {
        switch self {
        case .createCategory, .updateCategory, .patchCategory: return 1
        case .createLocation, .updateLocation, .patchLocation, .deleteLocation: return 2
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
}

extension SyncService {
    /// Applies a push batch: `changes` in the order sent, nil for each change the API could not
    /// read (it answers those itself). Returns the outcomes of the others, in the order given.
    /// Every change goes through the same service call as its single-record endpoint, in its own
    /// transaction behind the account gate (`Accounts`); a batch with nothing to apply, or of more
    /// than `maxPushChanges` changes (`tooManyChanges`: nothing is applied), reaches the gate
    /// alone. So the gate speaks first: a revoked token is E005 for the whole request, never a 200
    /// of per-change errors, and a new user is provisioned. The gate's refusal and a database
    /// failure end the request (the changes applied before stay applied, and announced); any
    /// other refusal of the domain is that change's outcome.
    public func push(_ caller: Caller, _ changes: [PushChange?]) throws -> [PushOutcome] {
        let readable = changes.enumerated().compactMap { index, change in change.map { (index: index, change: $0) } }
        if readable.isEmpty || changes.count > maxPushChanges {
            try accounts.admit(caller)
            if changes.count > maxPushChanges { throw LocifyError.tooManyChanges(limit: maxPushChanges) }
            return []
        }
        var outcomes = [PushOutcome?](repeating: nil, count: changes.count)
        for item in readable.sorted(by: { ($0.change.group, $0.index) < ($1.change.group, $1.index) }) {
            outcomes[item.index] = try apply(item.change, caller)
        }
        return outcomes.compactMap { $0 }
    }

    private func apply(_ change: PushChange, _ caller: Caller) throws -> PushOutcome {
        do {
            return .applied(try write(change, caller))
        } catch LocifyError.conflict(let state) {
            return .conflict(state)
        } catch LocifyError.tokenRevoked {
            throw LocifyError.tokenRevoked
        } catch let error as LocifyError {
            return .failed(error)
        }
    }

    private func write(_ change: PushChange, _ caller: Caller) throws -> RecordState {
        switch change {
        case .createCategory(let draft):
            return .category(try categories.create(caller, draft).record)
        case .updateCategory(let draft):
            return .category(try categories.replace(caller, draft).record)
        case .patchCategory(let patch):
            return .category(try categories.patch(caller, patch).record)
        case .createLocation(let draft):
            return .location(try locations.create(caller, draft).record)
        case .updateLocation(let draft):
            return .location(try locations.replace(caller, draft).record)
        case .patchLocation(let patch):
            return .location(try locations.patch(caller, patch).record)
        case .deleteCategory(let id, let options):
            return try categories.delete(
                caller, id: id, updatedAt: options.updatedAt, reassignTo: options.reassignCategoryID
            ).state
        case .deleteLocation(let id, let options):
            return try locations.delete(caller, id: id, updatedAt: options.updatedAt).state
        }
    }
}
