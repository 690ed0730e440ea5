import FoundationEssentials
import LocifyRules
import Primitives

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
        /// Every object under each of up to `folderBatchSize` folder prefixes, one per line.
        case storagePrefixes = "storage_prefixes"
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

    /// The user's folder prefixes of one location: `locations/<uid>/<location id>/`, one for each
    /// spelling of the id (`storageSpellings`: iOS clients name folders with upper-case ids).
    static func locationFolders(userID: String, id: UUID) -> [String] {
        folders(.locations, userID: userID, id: id)
    }

    /// The user's folder prefixes of one category: `categories/<uid>/<category id>/`, both letter cases.
    static func categoryFolders(userID: String, id: UUID) -> [String] {
        folders(.categories, userID: userID, id: id)
    }

    private static func folders(_ folder: UserStorageFolder, userID: String, id: UUID) -> [String] {
        id.storageSpellings.map { folder.prefix(uid: userID, record: $0) }
    }

    /// The most folder prefixes one `storagePrefixes` job holds (each costs a listing and its
    /// deletes, so a job stays a few seconds long and other users wait at most that for their turn).
    static let folderBatchSize = 20
    /// The most object paths one `storageObjects` job holds.
    static let objectBatchSize = 100

    /// Jobs deleting every object under the folder prefixes `folders`: a `storagePrefix` job each
    /// while there are at most `folderBatchSize`, else `storagePrefixes` jobs of that many. A
    /// cascade of 20,000 locations queues 2,001 jobs, not 40,002 (their inserts were a second of
    /// the delete).
    static func folders(_ folders: [String]) -> [CleanupJob] {
        batches(folders, size: folderBatchSize, single: .storagePrefix, batch: .storagePrefixes)
    }

    /// Jobs deleting the Storage objects `paths`: a `storageObject` job each while there are at
    /// most `objectBatchSize`, else `storageObjects` jobs of that many. So one request queues at
    /// most `objectBatchSize` jobs plus one per that many objects, never one per object.
    static func objects(_ paths: [String]) -> [CleanupJob] {
        batches(paths, size: objectBatchSize, single: .storageObject, batch: .storageObjects)
    }

    /// `targets`, each once and in order: one job each when there are at most `size` of them,
    /// else jobs of `size` targets, one per line (a last lone target gets a job of its own).
    private static func batches(_ targets: [String], size: Int, single: Kind, batch: Kind) -> [CleanupJob] {
        var seen = Set<String>(minimumCapacity: targets.count)
        let unique = targets.filter { seen.insert($0).inserted }
        guard unique.count > size else { return unique.map { CleanupJob(kind: single, target: $0) } }
        return stride(from: 0, to: unique.count, by: size).map { start in
            let part = unique[start..<min(start + size, unique.count)]
            return part.count == 1
                ? CleanupJob(kind: single, target: part[part.startIndex])
                : CleanupJob(kind: batch, target: part.joined(separator: "\n"))
        }
    }

    /// The targets of a job of `kind`: the lines of a batch, else the target itself.
    package static func targets(of target: String, kind: Kind?) -> [String] {
        kind == .storageObjects || kind == .storagePrefixes ? target.split(separator: "\n").map(String.init) : [target]
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

extension UUID {
    /// The spellings of this id in the user's Storage paths: lower case, then upper case (iOS
    /// clients name folders with `uuidString`) unless the id has no letter.
    var storageSpellings: [String] {
        let lower = text(uppercase: false)
        let upper = text(uppercase: true)
        return lower == upper ? [lower] : [lower, upper]
    }

    private func text(uppercase: Bool) -> String {
        withUnsafeBytes(of: uuid) { raw in
            String(unsafeUninitializedCapacity: 36) { text in
                HexDigit.writeUUID(raw, uppercase: uppercase, into: text)
                return 36
            }
        }
    }
}
