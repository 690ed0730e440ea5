import FoundationEssentials
import LocifyRules
import Postgres

/// The SQL of the durable clean-up queue: what a deletion queues (`enqueue`) and what the
/// clean-up worker of `LocifyJobs` claims, finishes and counts.
public enum CleanupJobStore {
    /// A job the worker claimed, locked until the claiming transaction ends.
    public struct ClaimedJob: Sendable {
        /// The job's row id.
        public let id: Int64
        /// The `CleanupJob.Kind` raw value (a kind this server may not know, queued by another version).
        public let kind: String
        /// What the job deletes (`CleanupJob.targets` reads it).
        public let target: String
        /// Attempts before this one.
        public let attempts: Int32
        /// The user whose deletion queued the job.
        public let userID: String
    }

    /// Claims the next due job in turn order (`enqueue`), skipping jobs another transaction holds;
    /// a user's Auth account job only once none of that user's Storage jobs is pending. Nil when
    /// none is due.
    public static func claimNext(_ connection: PostgresConnection) throws -> ClaimedJob? {
        let job = ColumnSet(["id", "kind", "target", "attempts", "user_id"], alias: "j") { column throws(PostgresError) in
            ClaimedJob(
                id: try column.next(), kind: try column.next(), target: try column.next(), attempts: try column.next(),
                userID: try column.next())
        }
        return try connection.query(
            """
            SELECT \(unsafeSQL: job.sql) FROM cleanup_jobs j
            WHERE j.state = 'pending' AND j.run_after <= now()
              AND (j.kind <> 'auth_account' OR NOT EXISTS (
                     SELECT 1 FROM cleanup_jobs s
                     WHERE s.user_id = j.user_id AND s.kind <> 'auth_account' AND s.state = 'pending'))
            ORDER BY j.turn, j.id
            LIMIT 1
            FOR UPDATE SKIP LOCKED
            """
        ).first.map(job.decode)
    }

    /// Removes a job that is done (or has nothing left to do).
    public static func remove(_ connection: PostgresConnection, id: Int64) throws {
        try connection.query("DELETE FROM cleanup_jobs WHERE id = \(id)")
    }

    /// Records a failed attempt of a job: retried after `retryAfterSeconds`, or, when nil, kept as
    /// `failed_permanent` for an operator and never retried.
    public static func recordFailure(_ connection: PostgresConnection, id: Int64, error: String, retryAfterSeconds: Double?) throws {
        if let retryAfterSeconds {
            try connection.query(
                """
                UPDATE cleanup_jobs SET attempts = attempts + 1, last_error = \(error),
                       run_after = now() + make_interval(secs => \(retryAfterSeconds))
                WHERE id = \(id)
                """)
        } else {
            try connection.query(
                "UPDATE cleanup_jobs SET attempts = attempts + 1, last_error = \(error), state = 'failed_permanent' WHERE id = \(id)")
        }
    }

    /// The queue's depth: jobs pending that have not failed yet, pending after a failure, and
    /// failed for good.
    public static func depth(_ connection: PostgresConnection) throws -> (pending: Int64, failed: Int64, failedPermanent: Int64) {
        let counts = ColumnSet(
            [
                "count(*) FILTER (WHERE state = 'pending' AND last_error IS NULL)",
                "count(*) FILTER (WHERE state = 'pending' AND last_error IS NOT NULL)",
                "count(*) FILTER (WHERE state = 'failed_permanent')",
            ]
        ) { column throws(PostgresError) in
            (pending: try column.next(Int64.self), failed: try column.next(Int64.self), failedPermanent: try column.next(Int64.self))
        }
        return try connection.query("SELECT \(unsafeSQL: counts.sql) FROM cleanup_jobs").first.map(counts.decode) ?? (0, 0, 0)
    }

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

    /// Queues, in the caller's transaction, the Storage clean-up of what a delete removed: the
    /// folders `folders`, the objects `urls` name, and each of `locations`' own folders and the
    /// objects its image URLs name outside them. An object inside a folder queued here, or in
    /// `queuedBefore` (queued by an earlier transaction), goes with that folder's job. Nothing is
    /// queued for a user id that cannot name a folder safely (`CleanupJob.isFolderSafe`).
    func queueCleanup(
        _ connection: PostgresConnection, userID: String, folders: [String] = [], urls: [String] = [],
        locations: [HiddenLocation], queuedBefore: [String] = []
    ) throws {
        var folders = folders
        var urls = urls
        for location in locations {
            folders += CleanupJob.locationFolders(userID: userID, id: location.id)
            urls += location.imageURLsOutsideFolder
        }
        // The set is built only when some URL names an object: a cascade of locations whose photos
        // are all in their own folders reads none.
        var objects = ownedObjects(urls, userID: userID)
        if !objects.isEmpty {
            let queued = Set(folders + queuedBefore)
            objects.removeAll { CleanupJob.isInside($0, anyOf: queued) }
        }
        let jobs = CleanupJob.folders(folders) + CleanupJob.objects(objects)
        if CleanupJob.isFolderSafe(userID: userID), !jobs.isEmpty {
            try CleanupJobStore.enqueue(connection, userID: userID, jobs)
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
