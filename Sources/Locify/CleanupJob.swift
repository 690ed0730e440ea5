/// One durable piece of clean-up work for Google, recorded in the transaction that made it
/// necessary and retried by `CleanupWorker` until it succeeds (API.md section 8).
public struct CleanupJob: Sendable, Equatable {
    /// What to delete.
    public enum Kind: String, Sendable {
        /// Every Storage object under a folder prefix (ending in `/`) in the configured bucket.
        case storagePrefix = "storage_prefix"
        /// One Storage object in the configured bucket.
        case storageObject = "storage_object"
        /// The Firebase Auth account; runs after the user's Storage jobs.
        case authAccount = "auth_account"
    }

    public var kind: Kind
    /// The folder prefix, the object path, or the uid.
    public var target: String

    public init(kind: Kind, target: String) {
        self.kind = kind
        self.target = target
    }

    /// The user's folder of one location: `locations/<uid>/<location id>/`.
    static func locationFolder(userID: String, id: String) -> CleanupJob {
        CleanupJob(kind: .storagePrefix, target: "locations/\(userID)/\(id)/")
    }

    /// The user's folder of one category: `categories/<uid>/<category id>/`.
    static func categoryFolder(userID: String, id: String) -> CleanupJob {
        CleanupJob(kind: .storagePrefix, target: "categories/\(userID)/\(id)/")
    }

    /// Whether Storage paths can safely be built from this uid: a uid with a `/` (or a dot
    /// segment) could reach into another user's folder, so such accounts get no Storage jobs.
    static func isFolderSafe(userID: String) -> Bool {
        !userID.isEmpty && !userID.contains("/") && userID != "." && userID != ".."
    }
}
