import Foundation
import LocifyRules

/// What a sync status view shows (issue 26): what the engine is doing, when the copy was last
/// complete, the pending-change badge, and what the server refused or settled since the user last
/// looked. ``SyncEngine/statusUpdates()`` publishes it; ``SyncStatusModel`` binds it to SwiftUI.
public struct SyncStatus: Sendable, Hashable {
    /// What the engine is doing now.
    public enum Activity: Sendable, Hashable {
        /// Nothing: the last sync succeeded (or none ran yet).
        case idle
        /// A sync runs, this far.
        case syncing(SyncProgress)
        /// The connectivity says offline, or the last attempt could not reach the server
        /// (``LocifyError/network(_:)``): edits wait in the outbox.
        case offline
        /// The last attempt failed with this error (not a network one); the next success clears it.
        case failed(LocifyError)
    }

    /// What the engine is doing now.
    public var activity: Activity = .idle
    /// When a sync (or a live-mode pull) last reached the end of the change feed: the copy was
    /// complete then. Kept in the store, so it survives a relaunch; nil before the first.
    public var lastSyncedAt: Date?
    /// Local changes the server has not acknowledged yet (the badge).
    public var pendingChanges = 0
    /// Photos taken offline that wait to be uploaded (with an image uploader set; ImageUploads.swift).
    public var pendingImageUploads = 0
    /// Refused changes kept for the user to retry or discard (``SyncEngine/refusedChanges()``).
    public var refusedChanges = 0
    /// Changes the server refused since the user last looked (``SyncEngine/markStatusSeen()``).
    public var unseenRefusals = 0
    /// Local changes that lost to a newer version (E008) since the user last looked.
    public var unseenConflicts = 0
    /// What the schedule ``SyncEngine/start(_:)`` runs is doing (online, live, the next attempt
    /// and why, failures in a row); nil while none runs.
    public var schedule: ScheduleState?

    /// The status of an engine that has done nothing yet.
    public init() {}

    /// Whether a sync runs now.
    public var isSyncing: Bool {
        if case .syncing = activity { return true }
        return false
    }
}

/// How far the running sync is.
public struct SyncProgress: Sendable, Hashable {
    /// Changes sent so far (a replayed batch counts again).
    public var pushed = 0
    /// Changes pending when the sync began.
    public var toPush = 0
    /// Feed entries stored so far.
    public var pulled = 0

    /// Progress with these counts.
    public init(pushed: Int = 0, toPush: Int = 0, pulled: Int = 0) {
        self.pushed = pushed
        self.toPush = toPush
        self.pulled = pulled
    }
}

/// A local change the server refused (not a conflict: e.g. E007, a place whose category was
/// deleted elsewhere), kept in the store beside the record it concerns until the app retries
/// (``SyncEngine/retryRefusedChange(id:)``) or discards (``SyncEngine/discardRefusedChange(id:)``)
/// it. The local copy meanwhile shows the server's record.
public struct RefusedChange: Codable, Sendable, Hashable, Identifiable {
    /// The outbox id the change had: unique, increasing in the order the changes were made.
    public var id: Int64
    /// The change as it was sent.
    public var change: PushChange
    /// The server's answer (its code, message, details and request id).
    public var error: ServerError
    /// When the refusal arrived (the device's clock).
    public var refusedAt: Date

    /// A refusal of `change`.
    public init(id: Int64, change: PushChange, error: ServerError, refusedAt: Date) {
        self.id = id
        self.change = change
        self.error = error
        self.refusedAt = refusedAt
    }

    /// The kind of record the change concerns.
    public var recordKind: RecordKind { change.kind }
    /// The record the change concerns.
    public var recordID: UUID { change.recordID }
}

extension SyncStatus {
    /// The status after `event`: the activity follows the sync, the unseen counts grow.
    mutating func apply(_ event: SyncEvent, pending: Int) {
        switch event {
        case .started:
            activity = .syncing(SyncProgress(toPush: pending))
        case .pushed(let changes, _, _, _):
            if case .syncing(var progress) = activity {
                progress.pushed += changes
                activity = .syncing(progress)
            }
        case .pulled(let changes, _):
            if case .syncing(var progress) = activity {
                progress.pulled += changes
                activity = .syncing(progress)
            }
        case .conflictResolved:
            unseenConflicts += 1
        case .changeRejected:
            unseenRefusals += 1
        case .finished:
            activity = .idle
        case .failed(let error), .liveRetrying(let error, _):
            activity = Self.activity(after: error)
        case .restored, .resyncStarted, .unrecognized, .imageUploadFailed, .imageMissing:
            break
        }
    }

    /// The activity a failure leaves: offline for the network, idle when cancelled, else failed.
    static func activity(after error: LocifyError) -> Activity {
        switch error {
        case .network: return .offline
        case .cancelled: return .idle
        default: return .failed(error)
        }
    }
}

extension SyncEngine {
    /// The engine's status now, then each change, to every subscriber: a new stream starts with
    /// the current value (a view shows it at once), and a slow consumer gets the latest. It ends
    /// when the consumer stops iterating (or its task is cancelled).
    public func statusUpdates() -> AsyncStream<SyncStatus> {
        _ = try? loaded()  // the counts and the last sync time, from the store
        let (stream, continuation) = AsyncStream<SyncStatus>.makeStream(bufferingPolicy: .bufferingNewest(1))
        continuation.yield(status)
        statusSubscribers[subscribe(continuation)] = continuation
        return stream
    }

    /// The user looked at the status: the unseen refusals and conflicts go back to 0 (the refused
    /// changes stay until retried or discarded).
    public func markStatusSeen() {
        updateStatus {
            $0.unseenRefusals = 0
            $0.unseenConflicts = 0
        }
    }

    /// The refused changes kept, in the order they were made.
    public func refusedChanges() async throws -> [RefusedChange] {
        try loaded().refused.values.sorted { $0.id < $1.id }
    }

    /// Makes a refused change again, as a new local edit (stamped now, so it wins over what the
    /// server had then), and drops the refusal in the same commit. It is checked as any edit is:
    /// a place whose category is still gone throws E007 and the refusal stays (save it into
    /// another category and discard this one). A delete of a record gone meanwhile only drops it.
    public func retryRefusedChange(id: Int64) async throws {
        guard let refused = try loaded().refused[id] else { throw LocifyError(RuleViolation.notFound("refused change")) }
        switch refused.change {
        case .createCategory(let write), .updateCategory(let write):
            try saveCategory(id: write.id, name: write.name, icon: write.icon, resolving: id)
        case .createLocation(let write), .updateLocation(let write):
            try saveLocation(withPendingImages(LocationDraft(write)), resolving: id)
        case .patchCategory(let patch):
            guard let current = try await category(id: patch.id) else { throw LocifyError(RuleViolation.notFound("category")) }
            var write = CategoryWrite(current, at: nil)
            for field in patch.fields { write.take(field, from: patch.values) }
            try saveCategory(id: patch.id, name: write.name, icon: write.icon, resolving: id)
        case .patchLocation(let patch):
            // The patch's fields again, onto the place as it is now.
            guard let current = try await location(id: patch.id) else { throw LocifyError(RuleViolation.notFound("location")) }
            var write = LocationWrite(current, at: nil)
            for field in patch.fields { write.take(field, from: patch.values) }
            var draft = LocationDraft(editing: current)
            (draft.categoryID, draft.name, draft.address, draft.description) = (write.categoryID, write.name, write.address, write.description)
            (draft.latitude, draft.longitude, draft.isFavorite, draft.imageURLs) = (write.latitude, write.longitude, write.isFavorite, write.imageURLs)
            if patch.fields.contains(.imageURLs) { draft = try withPendingImages(draft) }
            try saveLocation(draft, resolving: id)
        case .deleteLocation(let write):
            if try await location(id: write.id) == nil { return try discardRefusedChange(id: id) }
            try deleteLocation(id: write.id, resolving: id)
        case .deleteCategory(let write):
            if try await category(id: write.id) == nil { return try discardRefusedChange(id: id) }
            try deleteCategory(id: write.id, reassignTo: write.reassignCategoryID, resolving: id)
        }
    }

    /// Drops a refused change: the local copy keeps the server's record.
    public func discardRefusedChange(id: Int64) throws {
        var transaction = try begin(resolving: id)
        try commit(&transaction)
    }

    /// Changes the status and tells the subscribers when it differs.
    func updateStatus(_ change: (inout SyncStatus) -> Void) {
        var updated = status
        change(&updated)
        guard updated != status else { return }
        status = updated
        for continuation in statusSubscribers.values { continuation.yield(updated) }
    }

    /// The counts and the last sync time of the committed state.
    func updateStatus(from state: EngineState) {
        updateStatus {
            $0.pendingChanges = state.outbox.count
            $0.pendingImageUploads = state.metadata.pendingImages.count
            $0.refusedChanges = state.refused.count
            $0.lastSyncedAt = state.metadata.lastSyncedAt
        }
    }

    /// The connectivity changed: offline shows at once (unless a sync runs); back online clears it.
    func connectivityChanged(online: Bool) {
        updateStatus { status in
            if !online, !status.isSyncing { status.activity = .offline }
            if online, status.activity == .offline { status.activity = .idle }
        }
    }
}

extension LocationDraft {
    /// The draft a location write was made from.
    init(_ write: LocationWrite) {
        self.init(
            id: write.id, categoryID: write.categoryID, name: write.name, address: write.address, description: write.description,
            latitude: write.latitude, longitude: write.longitude, isFavorite: write.isFavorite, imageURLs: write.imageURLs)
    }
}

#if canImport(Observation) && canImport(SwiftUI)
import Observation

/// The engine's ``SyncStatus`` for SwiftUI: a view reads `model.status` and follows it while it
/// is on screen (`.task { await model.follow() }`).
@MainActor
@Observable
public final class SyncStatusModel {
    /// The latest status.
    public private(set) var status = SyncStatus()
    @ObservationIgnored private let engine: SyncEngine

    /// A model of `engine`'s status (``SyncStatus()`` until ``follow()`` runs).
    public init(engine: SyncEngine) {
        self.engine = engine
    }

    /// Follows the status until the calling task is cancelled (SwiftUI cancels `.task` when the
    /// view goes).
    public func follow() async {
        for await status in await engine.statusUpdates() { self.status = status }
    }

    /// The user saw the status details: the unseen counts go back to 0.
    public func markSeen() async {
        await engine.markStatusSeen()
    }
}
#endif
