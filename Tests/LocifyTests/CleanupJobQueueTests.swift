import Foundation
import Locify
import LocifyJobs
import LocifyRules
import Postgres
import Primitives
import Testing
import TestSupport
import TestSupportDatabase

/// Which durable clean-up jobs each deletion records, in its own transaction (openapi.yaml and
/// section 11 "Storage clean-up"): only the user's own folders and objects in the configured bucket.
@Suite("Clean-up: the jobs each deletion queues")
struct CleanupJobQueueTests {
    struct QueuedJob: Hashable, CustomStringConvertible {
        var userID: String
        var kind: String
        var target: String
        var description: String { "\(kind) \(target) (\(userID))" }
    }

    static func jobs(_ db: LocifyTestDatabase) throws -> [QueuedJob] {
        try db.pool.withConnection { connection in
            var jobs: [QueuedJob] = []
            for row in try connection.query("SELECT user_id, kind, target FROM cleanup_jobs ORDER BY id") {
                jobs.append(QueuedJob(userID: try row.decode(0), kind: try row.decode(1), target: try row.decode(2)))
            }
            return jobs
        }
    }

    static func firebaseURL(_ path: String, bucket: String = TestConstants.bucket) -> String {
        "https://firebasestorage.googleapis.com/v0/b/\(bucket)/o/"
            + path.replacingOccurrences(of: "/", with: "%2F") + "?alt=media&token=abc"
    }

    @Test("account deletion queues the user's two folders, then the Auth account")
    func accountDeletion() throws {
        let db = try LocifyTestDatabase.create()
        defer { db.drop() }
        let caller = TestConstants.newCaller()
        let other = TestConstants.newCaller()
        _ = try db.services.users.profile(caller)
        _ = try db.services.users.profile(other)
        try db.services.users.delete(caller)
        let uid = caller.userID
        #expect(
            try Self.jobs(db) == [
                QueuedJob(userID: uid, kind: "storage_prefix", target: "locations/\(uid)/"),
                QueuedJob(userID: uid, kind: "storage_prefix", target: "categories/\(uid)/"),
                QueuedJob(userID: uid, kind: "auth_account", target: uid),
            ])
    }

    @Test("a uid that could reach into another folder gets no Storage job, only the Auth account job")
    func unsafeUID() throws {
        let db = try LocifyTestDatabase.create()
        defer { db.drop() }
        for uid in ["evil/../victim", "..", "."] {
            let caller = Caller(userID: uid, tokenIssuedAt: Int64(Date().timeIntervalSince1970))
            _ = try db.services.users.profile(caller)
            try db.services.users.delete(caller)
        }
        #expect(try Self.jobs(db).map(\.kind) == ["auth_account", "auth_account", "auth_account"])
    }

    @Test("a cascade queues the category folder, each cascaded location's folder and the owned objects it referenced, nothing else")
    func cascade() throws {
        let db = try LocifyTestDatabase.create()
        defer { db.drop() }
        let caller = TestConstants.newCaller()
        let uid = caller.userID
        let doomed = UUID()
        let kept = UUID()
        _ = try db.services.categories.create(
            caller, CategoryDraft(id: doomed, name: "Doomed", icon: Self.firebaseURL("categories/\(uid)/icons/doomed.png")))
        _ = try db.services.categories.create(caller, CategoryDraft(id: kept, name: "Kept"))
        let first = UUID()
        let second = UUID()
        let alreadyDeleted = UUID()
        let elsewhere = UUID()
        _ = try db.services.locations.create(
            caller,
            LocationDraft(
                id: first, categoryID: doomed, name: "First", latitude: 1, longitude: 1,
                imageURLs: [
                    Self.firebaseURL("locations/\(uid)/\(first.uuidString.lowercased())/a.jpg"),
                    Self.firebaseURL("locations/\(uid)/shared/s.jpg"),
                    Self.firebaseURL("locations/other-user/o.jpg"),
                    Self.firebaseURL("locations/\(uid)/b.jpg", bucket: "another-bucket"),
                    Self.firebaseURL("locations/\(uid)x/trick.jpg"),
                    Self.firebaseURL("locations/\(uid)/../other-user/z.jpg"),
                    "https://example.com/locations/\(uid)/e.jpg",
                ]))
        _ = try db.services.locations.create(
            caller,
            LocationDraft(
                id: second, categoryID: doomed, name: "Second", latitude: 2, longitude: 2,
                imageURLs: ["https://storage.googleapis.com/\(TestConstants.bucket)/categories/\(uid)/x/y%20z.png"]))
        _ = try db.services.locations.create(
            caller,
            LocationDraft(
                id: alreadyDeleted, categoryID: doomed, name: "Deleted before", latitude: 3, longitude: 3,
                imageURLs: [Self.firebaseURL("locations/\(uid)/old/gone.jpg")]))
        _ = try db.services.locations.delete(caller, id: alreadyDeleted, updatedAt: nil)
        _ = try db.services.locations.create(
            caller,
            LocationDraft(
                id: elsewhere, categoryID: kept, name: "Elsewhere", latitude: 4, longitude: 4,
                imageURLs: [Self.firebaseURL("locations/\(uid)/\(elsewhere.uuidString.lowercased())/keep.jpg")]))
        #expect(try Self.jobs(db).isEmpty, "a single location delete leaves images to the client")

        _ = try db.services.categories.delete(caller, id: doomed, updatedAt: nil, reassignTo: nil)
        CascadeWorker(pool: db.pool, cascades: db.services.cascades, logger: TestDatabase.logger).settleNow()  // the batches queue the locations' clean-up (PendingCascades)
        let jobs = try Self.jobs(db)
        #expect(jobs.allSatisfy { $0.userID == uid })
        let expected: Set<QueuedJob> = [
            QueuedJob(userID: uid, kind: "storage_prefix", target: "categories/\(uid)/\(doomed.uuidString.lowercased())/"),
            QueuedJob(userID: uid, kind: "storage_prefix", target: "categories/\(uid)/\(doomed.uuidString)/"),
            QueuedJob(userID: uid, kind: "storage_prefix", target: "locations/\(uid)/\(first.uuidString.lowercased())/"),
            QueuedJob(userID: uid, kind: "storage_prefix", target: "locations/\(uid)/\(first.uuidString)/"),
            QueuedJob(userID: uid, kind: "storage_prefix", target: "locations/\(uid)/\(second.uuidString.lowercased())/"),
            QueuedJob(userID: uid, kind: "storage_prefix", target: "locations/\(uid)/\(second.uuidString)/"),
            QueuedJob(userID: uid, kind: "storage_object", target: "categories/\(uid)/icons/doomed.png"),
            // locations/<uid>/<first>/a.jpg is inside a queued folder: no job of its own.
            QueuedJob(userID: uid, kind: "storage_object", target: "locations/\(uid)/shared/s.jpg"),
            QueuedJob(userID: uid, kind: "storage_object", target: "categories/\(uid)/x/y z.png"),
        ]
        #expect(Set(jobs) == expected)
        #expect(jobs.count == expected.count)

        // Deleting the tombstone again is an idempotent replay: nothing more is queued.
        _ = try db.services.categories.delete(caller, id: doomed, updatedAt: nil, reassignTo: nil)
        #expect(try Self.jobs(db).count == expected.count)
    }

    @Test("a reassign queues only the category's folder")
    func reassign() throws {
        let db = try LocifyTestDatabase.create()
        defer { db.drop() }
        let caller = TestConstants.newCaller()
        let uid = caller.userID
        let source = UUID()
        let target = UUID()
        _ = try db.services.categories.create(
            caller, CategoryDraft(id: source, name: "Source", icon: Self.firebaseURL("categories/\(uid)/icons/source.png")))
        _ = try db.services.categories.create(caller, CategoryDraft(id: target, name: "Target"))
        let moved = UUID()
        _ = try db.services.locations.create(
            caller,
            LocationDraft(
                id: moved, categoryID: source, name: "Moved", latitude: 1, longitude: 1,
                imageURLs: [Self.firebaseURL("locations/\(uid)/\(moved.uuidString.lowercased())/a.jpg")]))
        _ = try db.services.categories.delete(caller, id: source, updatedAt: nil, reassignTo: target)
        #expect(
            try Self.jobs(db) == [
                QueuedJob(userID: uid, kind: "storage_prefix", target: "categories/\(uid)/\(source.uuidString.lowercased())/"),
                QueuedJob(userID: uid, kind: "storage_prefix", target: "categories/\(uid)/\(source.uuidString)/"),
            ])
    }

    @Test("a refused or conflicting delete queues nothing")
    func refusedDeletes() throws {
        let db = try LocifyTestDatabase.create()
        defer { db.drop() }
        let caller = TestConstants.newCaller()
        let category = UUID()
        _ = try db.services.categories.create(
            caller, CategoryDraft(id: category, name: "Newer", updatedAt: Timestamp(rfc3339: "2025-06-01T00:00:00Z")))
        // Older than the stored record: 409, rolled back.
        #expect(throws: LocifyError.self) {
            try db.services.categories.delete(
                caller, id: category, updatedAt: Timestamp(rfc3339: "2025-01-01T00:00:00Z"), reassignTo: nil)
        }
        // Reassign to a category that does not exist: E007, rolled back.
        #expect(throws: LocifyError.self) {
            try db.services.categories.delete(caller, id: category, updatedAt: nil, reassignTo: UUID())
        }
        #expect(try Self.jobs(db).isEmpty)
    }
}
