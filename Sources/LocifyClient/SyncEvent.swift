import Foundation

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
    /// A photo of a place was not uploaded in this sync (every attempt failed); it and the place's
    /// change wait for the next sync.
    case imageUploadFailed(locationID: UUID, url: String, LocifyError)
    /// A photo taken offline can never be uploaded: its file is gone from the device. It was
    /// removed from the place, whose change then went on.
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
    /// Photos taken offline that were uploaded (``SyncEngine/setImageUploader(_:settings:)``).
    public var imagesUploaded = 0
    /// Photos whose upload failed in this sync; they are tried again at the next.
    public var imageUploadsFailed = 0

    /// An empty report (every total 0); the engine fills it during a sync.
    public init() {}
}
