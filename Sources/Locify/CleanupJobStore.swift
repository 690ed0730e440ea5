import FirebaseAdmin
import LocifyRules
import Postgres

/// The SQL of the durable clean-up queue.
enum CleanupJobStore {
    /// Records jobs in the caller's transaction, so they exist exactly when the deletion commits.
    static func enqueue(_ connection: PostgresConnection, userID: String, _ jobs: [CleanupJob]) throws {
        guard !jobs.isEmpty else { return }
        try connection.query(
            """
            INSERT INTO cleanup_jobs (user_id, kind, target)
            SELECT \(userID), kind, target FROM unnest(\(jobs.map(\.kind.rawValue)), \(jobs.map(\.target))) AS j(kind, target)
            """)
    }
}

/// Which Storage objects a deletion may remove: only objects in the configured bucket inside the
/// owner's own folders (openapi.yaml, `HttpsUrl`); every other URL is simply forgotten.
struct StorageScope: Sendable {
    /// The bucket the server may delete from.
    let bucket: String
    /// Where objects whose name cannot exist are counted (and logged) instead of queued.
    let skips: CleanupSkips

    /// The object paths, among `urls`, that are safe to delete for `userID`. A URL stored before
    /// the write-time rule whose object name cannot exist (a control character, over 1,024
    /// bytes) is skipped and counted: queuing it would fail the deletion (NUL) or a job forever.
    func ownedObjects(_ urls: [String], userID: String) -> [String] {
        urls.compactMap { url in
            guard let reference = StorageObjectReference.parse(url),
                reference.isInsideUserFolders(bucket: bucket, uid: userID)
            else { return nil }
            if let problem = StorageObjectReference.objectNameProblem(reference.path) {
                skips.record(problem, userID: userID, objectName: reference.path, stage: "enqueue")
                return nil
            }
            return reference.path
        }
    }
}
