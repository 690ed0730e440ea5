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
        /// Up to `objectBatchSize` Storage objects of the configured bucket, one path per line
        /// (an object name has no control character, so a line break cannot be part of one).
        case storageObjects = "storage_objects"
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

    /// The most object paths one `storageObjects` job holds: a request queues one job per folder
    /// and one per this many objects outside the folders it queues, never one per object.
    static let objectBatchSize = 100

    /// Jobs deleting the Storage objects `paths` (each once), `objectBatchSize` to a job; a lone
    /// path is a `storageObject` job.
    static func objects(_ paths: [String]) -> [CleanupJob] {
        var seen: Set<String> = []
        let unique = paths.filter { seen.insert($0).inserted }
        return stride(from: 0, to: unique.count, by: objectBatchSize).map { start in
            let batch = unique[start..<min(start + objectBatchSize, unique.count)]
            return batch.count == 1
                ? CleanupJob(kind: .storageObject, target: batch[batch.startIndex])
                : CleanupJob(kind: .storageObjects, target: batch.joined(separator: "\n"))
        }
    }

    /// The object paths of a `storageObjects` job's target.
    static func objectPaths(_ target: String) -> [String] {
        target.split(separator: "\n").map(String.init)
    }

    /// Whether one of `folders` (prefixes ending in `/`) holds `path`. Each of the path's own
    /// folder prefixes is looked up in the set, so the cost follows the path's length, not the
    /// number of folders (a prefix test against every folder made a big cascade quadratic).
    static func isInside(_ path: String, anyOf folders: Set<String>) -> Bool {
        var end = path.startIndex
        while let slash = path[end...].firstIndex(of: "/") {
            end = path.index(after: slash)
            if folders.contains(String(path[..<end])) { return true }
        }
        return false
    }

    /// Whether Storage paths can safely be built from this uid: a uid with a `/` (or a dot
    /// segment) could reach into another user's folder, so such accounts get no Storage jobs.
    static func isFolderSafe(userID: String) -> Bool {
        !userID.isEmpty && !userID.contains("/") && userID != "." && userID != ".."
    }
}
