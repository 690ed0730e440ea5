import FoundationEssentials

/// One durable piece of clean-up work for Google, recorded in the transaction that made it
/// necessary and retried by `CleanupWorker` until it succeeds (openapi.yaml).
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

    /// What the job deletes.
    public var kind: Kind
    /// The folder prefix, the object path, or the uid.
    public var target: String

    /// A job deleting `target`, read as `kind` says.
    public init(kind: Kind, target: String) {
        self.kind = kind
        self.target = target
    }

    /// The user's folders of one location: `locations/<uid>/<location id>/`, with the id in lower
    /// case and in upper case (iOS clients name folders with `uuidString`, which is upper case).
    static func locationFolders(userID: String, id: UUID) -> [CleanupJob] {
        folders("locations", userID: userID, id: id)
    }

    /// The user's folders of one category: `categories/<uid>/<category id>/`, both letter cases.
    static func categoryFolders(userID: String, id: UUID) -> [CleanupJob] {
        folders("categories", userID: userID, id: id)
    }

    private static func folders(_ root: String, userID: String, id: UUID) -> [CleanupJob] {
        let lower = id.lowercasedString
        return [lower, lower.uppercased()].map { CleanupJob(kind: .storagePrefix, target: "\(root)/\(userID)/\($0)/") }
    }

    /// Whether Storage paths can safely be built from this uid: a uid with a `/` (or a dot
    /// segment) could reach into another user's folder, so such accounts get no Storage jobs.
    static func isFolderSafe(userID: String) -> Bool {
        !userID.isEmpty && !userID.contains("/") && userID != "." && userID != ".."
    }
}
