import Foundation
import Locify
import LocifyJobs
import Postgres
import Testing
import TestSupport
import TestSupportDatabase

/// A database connection killed in the middle of a multi-row transaction (issue 9): the category
/// delete is held on a row lock after it has started writing, its backend is terminated, and
/// nothing of it may remain: the write was not acknowledged, so it must not be half applied.
@Suite("Faults: a connection killed inside a transaction")
struct FaultTransactionTests {
    enum DeleteKind: String, CaseIterable, Sendable {
        case cascade
        case reassign
    }

    @Test("a category delete whose backend is killed mid-transaction leaves every row, count and stamp as it was; a retry then applies it whole", arguments: DeleteKind.allCases)
    func killedCategoryDelete(kind: DeleteKind) throws {
        let fixture = try LocifyTestDatabase.create(poolSize: 4)
        defer { fixture.drop() }
        let services = fixture.services
        let caller = TestConstants.newCaller()
        let category = try services.categories.create(caller, CategoryDraft(id: UUID(), name: "Doomed")).record
        let target = try services.categories.create(caller, CategoryDraft(id: UUID(), name: "Target")).record
        for index in 0..<20 {
            _ = try services.locations.create(
                caller, LocationDraft(id: UUID(), categoryID: category.id, name: "Place \(index)", latitude: 1, longitude: 2))
        }
        let before = try snapshot(fixture.pool, caller.userID)

        // Another transaction keeps new clean-up jobs out, so the delete stops on its last step,
        // queuing the category's Storage clean-up, after it has bumped the change stamp,
        // tombstoned the category and moved its locations (a reassign) or recorded the cascade.
        let blocker = try PostgresConnection.connect(fixture.database.configuration, logger: TestDatabase.logger)
        try blocker.execute(unsafeSQL: "BEGIN")
        try blocker.execute(unsafeSQL: "LOCK TABLE cleanup_jobs IN SHARE MODE")

        let outcome = Locked<Result<Category, any Error>?>(nil)
        let reassignTo = kind == .reassign ? target.id : nil
        let worker = Thread {
            let result = Result { try services.categories.delete(caller, id: category.id, updatedAt: nil, reassignTo: reassignTo) }
            outcome.withLock { $0 = result }
        }
        worker.start()

        let victim = try waitForBlockedBackend(fixture.pool, besides: blocker.backendProcessID)
        let terminated = try fixture.pool.withConnection { connection in
            try connection.query("SELECT pg_terminate_backend(\(victim))").first?.decode(0, as: Bool.self)
        }
        #expect(terminated == true)
        #expect(TestServerWait.until { outcome.withLock { $0 != nil } }, "the delete never returned")
        try blocker.execute(unsafeSQL: "ROLLBACK")

        switch outcome.withLock({ $0 }) {
        case .failure(let error as PostgresError)?:
            #expect(error.isUnavailable, "\(error.debugDescription)")
        default:
            Issue.record("the killed delete did not fail as unavailable: \(String(describing: outcome.withLock { $0 }))")
        }
        #expect(try snapshot(fixture.pool, caller.userID) == before, "a killed transaction left traces")

        // The client retries (it never got an acknowledgement): the delete applies whole, a
        // cascade once settled.
        _ = try services.categories.delete(caller, id: category.id, updatedAt: nil, reassignTo: reassignTo)
        CascadeWorker(pool: fixture.pool, cascades: services.cascades, logger: TestDatabase.logger).settleNow()
        let after = try snapshot(fixture.pool, caller.userID)
        let moved = after.locations.filter { $0.category == target.id.uuidString.lowercased() && $0.live }.count
        let tombstoned = after.locations.filter { !$0.live }.count
        #expect(kind == .reassign ? (moved == 20 && tombstoned == 0) : (moved == 0 && tombstoned == 20))
        #expect(after.changeSeq == before.changeSeq + 1)
    }

    /// Everything a category delete may touch, as plain values.
    struct Snapshot: Equatable {
        struct Row: Equatable {
            var id: String
            var category: String
            var live: Bool
            var version: Int64
            var changeSeq: Int64
        }

        var categories: [Row]
        var locations: [Row]
        var changeSeq: Int64
        var counts: [Int64]
        var jobs: Int64
        /// The user's pending cascades.
        var cascades: [String]
    }

    private func snapshot(_ pool: ConnectionPool, _ userID: String) throws -> Snapshot {
        try pool.withConnection { connection in
            func rows(_ table: String, _ categoryColumn: String) throws -> [Snapshot.Row] {
                try connection.query(
                    """
                    SELECT id::text, \(unsafeSQL: categoryColumn)::text, deleted_at IS NULL, version, change_seq
                    FROM \(unsafeSQL: table) WHERE user_id = \(userID) ORDER BY id
                    """
                ).map { row in
                    Snapshot.Row(
                        id: try row.decode(0, as: String.self), category: try row.decode(1, as: String.self),
                        live: try row.decode(2, as: Bool.self), version: try row.decode(3, as: Int64.self),
                        changeSeq: try row.decode(4, as: Int64.self))
                }
            }
            let user = try connection.query(
                "SELECT change_seq, category_count, hiding::text[] FROM users WHERE id = \(userID)")
            let counts = try connection.query(
                "SELECT location_count, favorite_count FROM categories WHERE user_id = \(userID) ORDER BY id"
            ).flatMap { [try $0.decode(0, as: Int64.self), try $0.decode(1, as: Int64.self)] }
            let jobs = try connection.query("SELECT count(*) FROM cleanup_jobs").first?.decode(0, as: Int64.self) ?? -1
            return Snapshot(
                categories: try rows("categories", "id"), locations: try rows("locations", "category_id"),
                changeSeq: try user.first?.decode(0, as: Int64.self) ?? -1,
                counts: counts + [try user.first?.decode(1, as: Int64.self) ?? -1],
                jobs: jobs, cascades: try user.first?.decode(2, as: [String].self) ?? ["no user"])
        }
    }

    /// The pid of the backend (other than `blocker`) waiting on a lock in this database.
    private func waitForBlockedBackend(_ pool: ConnectionPool, besides blocker: Int32) throws -> Int32 {
        var found: Int32?
        _ = try TestServerWait.untilThrowing {
            found = try pool.withConnection { connection in
                try connection.query(
                    """
                    SELECT pid FROM pg_stat_activity
                    WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> \(blocker)
                    """
                ).first?.decode(0, as: Int32.self)
            }
            return found != nil
        }
        guard let found else { throw TestDatabaseError("the delete never blocked on the row lock") }
        return found
    }
}

/// Polling with a generous upper bound (never a speed assertion).
enum TestServerWait {
    static func until(timeout: Duration = .seconds(60), _ condition: () -> Bool) -> Bool {
        eventually(timeout: timeout, condition)
    }

    static func untilThrowing(timeout: Duration = .seconds(60), _ condition: () throws -> Bool) throws -> Bool {
        try eventually(timeout: timeout, condition)
    }
}
