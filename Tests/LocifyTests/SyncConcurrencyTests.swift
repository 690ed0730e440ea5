import Foundation
import LocifyRules
import Postgres
import Primitives
import Synchronization
import Testing
import TestSupport

@testable import Locify

/// The promise of openapi.yaml: following cursors never skips a change, including changes
/// committed concurrently with a pull. Proven with concurrent writers and readers, and shown to
/// fail, deterministically, for a reader keyed on a timestamp instead of the per-user stamp.
@Suite("Sync under concurrency: the change_seq cursor never skips a change")
struct SyncConcurrencyTests {
    /// Ids the writers created, shared so they update and delete each other's records too.
    struct Registry {
        var categories: [UUID] = []
        var locations: [UUID] = []
    }

    /// What the writer and reader threads share.
    final class Shared: Sendable {
        let registry = Mutex(Registry())
        let writersDone = Atomic<Bool>(false)
    }

    /// One random push batch of 1-8 creates, updates and deletes (mostly server-stamped, a few
    /// with an old `updated_at` that will lose); every id it creates goes into `registry`.
    static func randomBatch(writer: Int, batch: Int, rng: inout SeededGenerator, shared: Shared) throws -> [PushChange] {
        var changes: [PushChange] = []
        for index in 0..<Int.random(in: 1...8, using: &rng) {
            let known = shared.registry.withLock { $0 }
            let categoryPool = known.categories + DefaultCategories.all.map(\.id)
            func anyCategory() -> UUID { categoryPool.randomElement(using: &rng) ?? DefaultCategories.all[0].id }
            let name = "w\(writer)-b\(batch)-\(index)"
            let make: (Timestamp?) throws -> PushChange
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<12:
                let id = UUID()
                shared.registry.withLock { $0.categories.append(id) }
                make = { .createCategory(try CategoryDraft(id: id, name: name, updatedAt: $0)) }
            case 12..<45:
                let id = UUID()
                shared.registry.withLock { $0.locations.append(id) }
                let location = Self.location(id, category: anyCategory(), name: name, rng: &rng)
                make = { .createLocation(try location($0)) }
            case 45..<72:
                guard let id = known.locations.randomElement(using: &rng) else { continue }
                let location = Self.location(id, category: anyCategory(), name: name + " edited", rng: &rng)
                make = { .updateLocation(try location($0)) }
            case 72..<88:
                guard let id = known.locations.randomElement(using: &rng) else { continue }
                make = { .deleteLocation(id: id, DeleteOptions(updatedAt: $0)) }
            case 88..<94:
                guard let id = known.categories.randomElement(using: &rng) else { continue }
                make = { .updateCategory(try CategoryDraft(id: id, name: name + " renamed", updatedAt: $0)) }
            default:
                guard let id = known.categories.randomElement(using: &rng) else { continue }
                let target = Bool.random(using: &rng) ? anyCategory() : nil
                make = { .deleteCategory(id: id, DeleteOptions(updatedAt: $0, reassignCategoryID: target)) }
            }
            let stale = Int.random(in: 0..<10, using: &rng) == 0 ? Timestamp(rfc3339: "2025-01-01T00:00:00Z") : nil
            changes.append(try make(stale))
        }
        return changes
    }

    /// A location draft with random coordinates and flag, its `updated_at` given later.
    private static func location(_ id: UUID, category: UUID, name: String, rng: inout SeededGenerator) -> (Timestamp?) throws -> LocationDraft {
        let latitude = Double.random(in: -90...90, using: &rng).rounded()
        let longitude = Double.random(in: -180...180, using: &rng).rounded()
        let isFavorite = Bool.random(using: &rng)
        return { updatedAt in
            try LocationDraft(
                id: id, categoryID: category, name: name, latitude: latitude, longitude: longitude, isFavorite: isFavorite, updatedAt: updatedAt)
        }
    }

    /// Reads the feed from a snapshot on until `isFinished()` was true before a pull that
    /// reported nothing more, with random page sizes.
    static func read(
        _ sync: SyncService, _ caller: Caller, seed: UInt64, isFinished: @Sendable () -> Bool, firstPageRead: DispatchSemaphore? = nil
    ) throws -> DomainReplica {
        var rng = SeededGenerator(seed: seed)
        var replica = DomainReplica()
        var cursor: SyncCursor?
        while true {
            let finishedBefore = isFinished()
            let limit = Int.random(in: 1...25, using: &rng)
            let page = try sync.pull(caller, since: cursor, limit: limit)
            replica.apply(page, limit: limit)
            firstPageRead?.signal()
            cursor = page.cursor
            if finishedBefore && !page.hasMore { return replica }
        }
    }

    @Test("writers push creates, updates and deletes while readers pull: the feed rebuilds exactly the server's state")
    func writersAndReaders() throws {
        let db = try LocifyTestDatabase.create(poolSize: 8)
        defer { db.drop() }
        let caller = TestConstants.newCaller()
        let sync = db.services.sync
        let seed = UInt64.random(in: 0...UInt64.max)
        let shared = Shared()
        // A history before the readers start, so the first snapshot spans several pages.
        var setup = SeededGenerator(seed: seed)
        for batch in 0..<8 {
            _ = try sync.push(caller, Self.randomBatch(writer: 99, batch: batch, rng: &setup, shared: shared))
        }

        let isFinished: @Sendable () -> Bool = { shared.writersDone.load(ordering: .acquiring) }
        let firstPage = DispatchSemaphore(value: 0)
        let halfway = DispatchSemaphore(value: 0)
        let early = BackgroundThread { try Self.read(sync, caller, seed: seed &+ 1, isFinished: isFinished, firstPageRead: firstPage) }
        #expect(firstPage.wait(timeout: .now() + 60) == .success)
        let writerCount = 4
        let batches = 25
        let writers = (0..<writerCount).map { writer in
            BackgroundThread { () throws -> [Int] in
                var rng = SeededGenerator(seed: seed &+ 100 &+ UInt64(writer))
                var statuses = [0, 0, 0]  // applied, conflict, error
                for batch in 0..<batches {
                    if writer == 0 && batch == batches / 2 { halfway.signal() }
                    let results = try sync.push(caller, Self.randomBatch(writer: writer, batch: batch, rng: &rng, shared: shared))
                    for outcome in results {
                        switch outcome {
                        case .applied: statuses[0] += 1
                        case .conflict: statuses[1] += 1
                        case .failed: statuses[2] += 1
                        }
                    }
                }
                return statuses
            }
        }
        // A second reader starts from scratch in the middle of the writes.
        #expect(halfway.wait(timeout: .now() + 120) == .success)
        let late = BackgroundThread { try Self.read(sync, caller, seed: seed &+ 2, isFinished: isFinished) }
        var statuses = [0, 0, 0]
        for writer in writers {
            let counts = try writer.join()
            for index in 0..<3 { statuses[index] += counts[index] }
        }
        shared.writersDone.store(true, ordering: .releasing)
        let replicas = [try early.join(), try late.join()]

        #expect(statuses[0] > 200, "seed \(seed): most changes applied (\(statuses))")
        for replica in replicas {
            #expect(replica.pages > 1)
            try replica.expectEqualsServer(db.services, caller)
        }
        // A fresh snapshot agrees too.
        let fresh = try Self.read(sync, caller, seed: seed &+ 3, isFinished: { true })
        try fresh.expectEqualsServer(db.services, caller)
    }

    // MARK: - Out-of-order commits

    /// The naive alternative the issue warns about: rows stamped with their write transaction's
    /// timestamp (what a `DEFAULT now()` column gives), read with `changed_at > last seen`.
    struct TimestampCursorReader {
        var lastSeen: String = "-infinity"
        var seen: Set<UUID> = []

        mutating func pull(_ pool: ConnectionPool, userID: String) throws {
            let rows = try pool.withTransaction(isolation: .repeatableRead, readOnly: true) { connection in
                try connection.query(
                    """
                    SELECT id, changed_at::text FROM locations
                    WHERE user_id = \(userID) AND changed_at > \(lastSeen)::timestamptz ORDER BY changed_at
                    """
                ).map { row in (try row.decode(0, as: UUID.self), try row.decode(1, as: String.self)) }
            }
            for (id, changedAt) in rows {
                seen.insert(id)
                lastSeen = changedAt
            }
        }
    }

    /// One location write as the services do it (user lock, change stamp), in a transaction the
    /// test controls, with `changed_at` set to the transaction's start as the naive design would.
    static func writeLocation(_ connection: PostgresConnection, _ caller: Caller, id: UUID, category: UUID) throws {
        let now = WallClock.system.now()
        let stamp = try AccountGate.lock(connection, caller, now: { now })
        _ = try LocationStore.insert(
            connection, userID: caller.userID,
            LocationDraft(id: id, categoryID: category, name: "Written", latitude: 1, longitude: 2),
            at: now, createdAt: now, stamp: stamp)
        try connection.query("UPDATE locations SET changed_at = now() WHERE user_id = \(caller.userID) AND id = \(id)")
    }

    @Test("a transaction that began first but commits last is missed by a timestamp cursor, never by the change_seq cursor")
    func outOfOrderCommit() throws {
        let db = try LocifyTestDatabase.create(poolSize: 4)
        defer { db.drop() }
        let caller = TestConstants.newCaller()
        let category = DefaultCategories.all[0].id
        let sync = db.services.sync
        var cursor = try sync.pull(caller, since: nil, limit: 100).cursor
        var broken = TimestampCursorReader()
        try broken.pull(db.pool, userID: caller.userID)

        let (early, late) = (UUID(), UUID())
        let earlyHasBegun = DispatchSemaphore(value: 0)
        let mayFinish = DispatchSemaphore(value: 0)
        // The early transaction begins (its timestamp is now fixed) and is held up before it writes.
        let earlyWriter = BackgroundThread {
            try db.pool.withTransaction { connection in
                try connection.query("SELECT now()")
                earlyHasBegun.signal()
                _ = mayFinish.wait(timeout: .now() + 60)
                try Self.writeLocation(connection, caller, id: early, category: category)
            }
        }
        #expect(earlyHasBegun.wait(timeout: .now() + 60) == .success)
        // A later transaction writes and commits first.
        try db.pool.withTransaction { connection in try Self.writeLocation(connection, caller, id: late, category: category) }

        // Both readers see the later write.
        try broken.pull(db.pool, userID: caller.userID)
        var page = try sync.pull(caller, since: cursor, limit: 100)
        #expect(page.changes.map(\.id) == [late])
        #expect(broken.seen.contains(late))
        cursor = page.cursor

        // Then the early transaction commits, with a timestamp older than what the readers saw.
        mayFinish.signal()
        try earlyWriter.join()
        try broken.pull(db.pool, userID: caller.userID)
        page = try sync.pull(caller, since: cursor, limit: 100)
        #expect(!broken.seen.contains(early), "the timestamp cursor skipped the change that committed out of order")
        #expect(page.changes.map(\.id) == [early], "the change_seq cursor delivers it")
        let stamps = try db.pool.withConnection { connection in
            try connection.query(
                "SELECT id, change_seq, changed_at < (SELECT changed_at FROM locations WHERE id = \(late)) FROM locations WHERE id IN (\(early), \(late))"
            ).map { row in (try row.decode(0, as: UUID.self), try row.decode(1, as: Int64.self), try row.decode(2, as: Bool.self)) }
        }
        let earlyRow = stamps.first { $0.0 == early }
        let lateRow = stamps.first { $0.0 == late }
        // Commit order is stamp order (late, then early), whatever the timestamps say.
        #expect(earlyRow?.2 == true && (earlyRow?.1 ?? 0) > (lateRow?.1 ?? .max))
    }

    @Test("a write transaction holding the user's lock makes the next write wait; pulls meanwhile are not blocked and skip nothing")
    func writesOfOneUserSerialise() throws {
        let db = try LocifyTestDatabase.create(poolSize: 4)
        defer { db.drop() }
        let caller = TestConstants.newCaller()
        let category = DefaultCategories.all[0].id
        let sync = db.services.sync
        var cursor = try sync.pull(caller, since: nil, limit: 100).cursor
        let (first, second) = (UUID(), UUID())
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let firstWriter = BackgroundThread {
            try db.pool.withTransaction { connection in
                try Self.writeLocation(connection, caller, id: first, category: category)
                holding.signal()
                _ = release.wait(timeout: .now() + 60)
            }
        }
        #expect(holding.wait(timeout: .now() + 60) == .success)
        let secondWriter = BackgroundThread {
            _ = try db.services.locations.create(
                caller, LocationDraft(id: second, categoryID: category, name: "Second", latitude: 3, longitude: 4))
        }
        // The second write is waiting for the user's row lock.
        let waiting = try eventually {
            try db.pool.withConnection { connection in
                try connection.query(
                    """
                    SELECT count(*) FROM pg_stat_activity
                    WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%UPDATE users SET change_seq%'
                    """
                ).first?.decode(0, as: Int64.self) == 1
            }
        }
        #expect(waiting)
        let during = try sync.pull(caller, since: cursor, limit: 100)
        #expect(during.changes.isEmpty && !during.hasMore)
        cursor = during.cursor
        release.signal()
        try firstWriter.join()
        try secondWriter.join()
        let after = try sync.pull(caller, since: cursor, limit: 100)
        #expect(after.changes.map(\.id) == [first, second], "stamp order is commit order")
    }
}
