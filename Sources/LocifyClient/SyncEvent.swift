import Foundation
import Logging

/// What a ``SyncEngine`` reports while it syncs (``SyncEngine/events()``).
public enum SyncEvent: Sendable, Hashable {
    /// A sync began.
    case started
    /// One push batch was answered.
    case pushed(changes: Int, applied: Int, conflicts: Int, rejected: Int)
    /// A local change lost to a newer server version (E008); the server's record (or tombstone)
    /// replaced the local copy.
    case conflictResolved(RecordState)
    /// The server refused a local change (e.g. E007: its category was deleted elsewhere); the
    /// local copy was replaced by the server's, or removed when the server has none.
    case changeRejected(PushChange, LocifyError)
    /// A local category delete lost to a newer edit elsewhere: the category and the locations
    /// the local delete had removed or moved are back.
    case restored(categoryID: UUID, locationIDs: [UUID])
    /// The cursor expired (E009): the local copy is being rebuilt from a snapshot; unsynced local
    /// changes are kept.
    case resyncStarted
    /// The server sent something this version does not know (a feed record type, a push
    /// status): it was skipped (a change with an unknown status stays queued).
    case unrecognized(String)
    /// One page of the change feed was applied.
    case pulled(changes: Int, hasMore: Bool)
    /// A photo of a place was not uploaded in this round of uploads (every attempt failed); it
    /// waits for the next round (the place's change went on without it).
    case imageUploadFailed(locationID: UUID, url: String, LocifyError)
    /// A photo taken offline can never be uploaded: its file is gone from the device. It was
    /// removed from the device's copy of the place; the server's copy, which never had it, keeps
    /// its photos.
    case imageMissing(locationID: UUID, url: String)
    /// The sync completed.
    case finished(SyncReport)
    /// The sync stopped; unacknowledged changes stay in the outbox for the next sync.
    case failed(LocifyError)
    /// Live mode (``SyncEngine/runLive(_:)``) failed to reach the server or to sync and tries
    /// again after the pause given (exponential backoff with jitter, after any `Retry-After`).
    case liveRetrying(LocifyError, after: Duration)
}

/// The totals of one ``SyncEngine/sync()``.
public struct SyncReport: Sendable, Hashable {
    /// Changes sent (a replayed batch counts again).
    public var pushed = 0
    /// Changes the server applied or replayed.
    public var applied = 0
    /// Changes that lost to a newer server version (E008); the server's record was adopted.
    public var conflicts = 0
    /// Changes the server refused with another error; the local copy was replaced by the server's
    /// record, or removed when the server has none.
    public var rejected = 0
    /// Feed entries applied.
    public var pulled = 0
    /// Whether the cursor had expired and the copy was rebuilt from a snapshot.
    public var resynced = false
    /// Photos taken offline uploaded since the previous report (``SyncEngine/setImageUploader(_:settings:)``:
    /// uploads run beside syncs, never within them).
    public var imagesUploaded = 0
    /// Photos whose round of uploads failed since the previous report; they are tried again in the next.
    public var imageUploadsFailed = 0

    /// An empty report (every total 0); the engine fills it during a sync.
    public init() {}
}

extension SyncEvent {
    /// Writes the event's log line (the engine's logging hook is its API client's `logger`): a
    /// sync's end at `info`, settlements at `notice`, refusals and failures at `warning`, with the
    /// failed request's `X-Request-Id`; progress at `debug`.
    func log(to logger: Logger) {
        switch self {
        case .started, .pushed, .pulled, .resyncStarted:
            logger.debug("sync: \(self)")
        case .finished(let report):
            logger.info("sync finished: \(report.pushed) pushed, \(report.pulled) pulled, \(report.conflicts) conflicts, \(report.rejected) refused")
        case .conflictResolved, .restored, .unrecognized:
            logger.notice("sync: \(self)")
        case .imageUploadFailed(let locationID, let url, let error):
            logger.warning("sync: the photo \(url) of place \(locationID) was not uploaded: \(error)")
        case .imageMissing(let locationID, let url):
            logger.warning("sync: the photo \(url) of place \(locationID) is gone from the device")
        case .changeRejected(let change, let error):
            logger.warning(
                "sync: \(change.action.rawValue) of \(change.kind.rawValue) \(change.recordID) refused: \(error)",
                metadata: ["request_id": "\(error.requestID ?? "none")"])
        case .failed(let error), .liveRetrying(let error, _):
            logger.warning("sync failed: \(error)", metadata: ["request_id": "\(error.requestID ?? "none")"])
        }
    }
}
