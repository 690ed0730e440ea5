import FoundationEssentials
import Glibc
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

    /// The start of the download URLs, as the Firebase SDKs write them byte for byte, of objects
    /// in `userID`'s location folders: `https://firebasestorage.googleapis.com/v0/b/<bucket>/o/locations%2F<uid>%2F`.
    /// Followed by a location's id (either letter case) and `%2F`, such a URL names an object
    /// inside that location's folder or, malformed, nothing `ownedObjects` would keep, so a
    /// cascade that queues the folder need not parse it (`urls(_:outsideFolderOf:plainPrefix:)`:
    /// parsing 200,000 of them was most of a 20,000-location delete). Nil when the bucket or the
    /// uid would need percent-encoding: then every URL goes through `ownedObjects`.
    func plainLocationURLPrefix(userID: String) -> String? {
        let isUnreserved = { (byte: UInt8) in
            (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A) || byte == 0x2D || byte == 0x2E
                || byte == 0x5F || byte == 0x7E
        }
        guard !bucket.isEmpty, !userID.isEmpty, bucket.utf8.allSatisfy(isUnreserved), userID.utf8.allSatisfy(isUnreserved) else {
            return nil
        }
        return "https://firebasestorage.googleapis.com/v0/b/\(bucket)/o/\(UserStorageFolder.locations.rawValue)%2F\(userID)%2F"
    }

    /// `urls` less those starting with `plainPrefix` (`plainLocationURLPrefix`), location `id` in
    /// either letter case and `%2F`, compared as bytes; all of them when `plainPrefix` is nil.
    static func urls(_ urls: [String], outsideFolderOf id: UUID, plainPrefix: String?) -> [String] {
        guard let plainPrefix else { return urls }
        let prefixes = [id.uuidString.lowercased(), id.uuidString].map { Array((plainPrefix + $0 + "%2F").utf8) }
        return urls.filter { url in
            var url = url
            return !url.withUTF8 { bytes in
                prefixes.contains { prefix in
                    guard bytes.count >= prefix.count, let start = bytes.baseAddress else { return false }
                    return prefix.withUnsafeBufferPointer { $0.baseAddress.map { memcmp(start, $0, prefix.count) == 0 } ?? false }
                }
            }
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
