import FoundationEssentials
import LocifyRules
import Postgres

/// The SQL of the durable clean-up queue.
enum CleanupJobStore {
    /// Records jobs in the caller's transaction, so they exist exactly when the deletion commits.
    ///
    /// Each job gets a `turn`, the order the worker claims in (migrations/0006): consecutive turns
    /// after the user's last pending job, and never before the turn the queue is at: the smallest
    /// turn of a due pending job (the job in progress, if any), else of any pending job. A job
    /// waiting out a backoff keeps its early turn but does not hold the queue's turn back, or every
    /// later user would queue ahead of the users being served. So users take turns job by job,
    /// and a user's jobs keep their order. Called under the user's write lock, so one user's
    /// turns never interleave.
    static func enqueue(_ connection: PostgresConnection, userID: String, _ jobs: [CleanupJob]) throws {
        guard !jobs.isEmpty else { return }
        try connection.query(
            """
            INSERT INTO cleanup_jobs (user_id, kind, target, turn)
            SELECT \(userID), kind, target, n + (
                       SELECT GREATEST(
                                  (SELECT max(turn) FROM cleanup_jobs WHERE user_id = \(userID) AND state = 'pending'),
                                  COALESCE(
                                      (SELECT min(turn) FROM cleanup_jobs WHERE state = 'pending' AND run_after <= now()),
                                      (SELECT min(turn) FROM cleanup_jobs WHERE state = 'pending')) - 1,
                                  0))
            FROM unnest(\(jobs.map(\.kind.rawValue)), \(jobs.map(\.target))) WITH ORDINALITY AS j(kind, target, n)
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

    /// Whether any of `urls` may name an object outside the own folder of location `id` of user
    /// `userID` (the row's `images_outside_folder`, migrations/0007). False only when every URL is
    /// the Firebase SDK's download form `https://firebasestorage.googleapis.com/v0/b/<bucket>/o/locations%2F<uid>%2F<id>%2F...`
    /// (the id in either letter case; bucket and uid spelled without percent-encoding, compared
    /// as bytes): such a URL names an object in that folder (of this server's bucket, which the
    /// folder's job removes, or of another, which the server never deletes from) or, malformed,
    /// nothing `ownedObjects` would keep. A cascade reads the URLs of the other locations only.
    static func imagesOutsideFolder(_ urls: [String], userID: String, id: UUID) -> Bool {
        guard !urls.isEmpty else { return false }
        guard !userID.isEmpty, userID.utf8.allSatisfy(PercentEncoding.isUnreserved) else { return true }
        let folders = id.storageSpellings.map { Array("/o/\(UserStorageFolder.locations.rawValue)%2F\(userID)%2F\($0)%2F".utf8) }
        let host = "https://firebasestorage.googleapis.com/v0/b/".utf8
        return !urls.allSatisfy { url in
            let bytes = url.utf8
            guard bytes.starts(with: host) else { return false }
            let afterHost = bytes.dropFirst(host.count)
            guard let slash = afterHost.firstIndex(of: UInt8(ascii: "/")), slash > afterHost.startIndex,
                afterHost[..<slash].allSatisfy(PercentEncoding.isUnreserved)
            else { return false }
            return folders.contains { afterHost[slash...].starts(with: $0) }
        }
    }

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
