import Foundation
import Locify
import LocifyJobs
import LocifyRules
import Postgres
import Primitives
import Testing
import TestSupport
import TestSupportDatabase

/// Every maintained counter that differs from a fresh `count(*)`, one line each (empty when all
/// agree): `users.category_count`, `categories.location_count` and `categories.favorite_count`
/// (live rows only, tombstones included in the scan so a tombstone's counters must be zero), and
/// the user totals the listing derives from them (sums over live categories).
let counterMismatchesSQL: PostgresQuery = """
    SELECT 'user ' || u.id || ': categories ' || u.category_count || ' vs ' || actual.categories
           || ', locations ' || derived.locations || ' vs ' || actual.locations
           || ', favorites ' || derived.favorites || ' vs ' || actual.favorites
    FROM users u
    CROSS JOIN LATERAL (
        SELECT COALESCE(sum(c.location_count), 0) AS locations, COALESCE(sum(c.favorite_count), 0) AS favorites
        FROM categories c WHERE c.user_id = u.id AND c.deleted_at IS NULL
    ) derived
    CROSS JOIN LATERAL (
        SELECT (SELECT count(*) FROM categories c WHERE c.user_id = u.id AND c.deleted_at IS NULL) AS categories,
               (SELECT count(*) FROM locations l WHERE l.user_id = u.id AND l.deleted_at IS NULL) AS locations,
               (SELECT count(*) FROM locations l WHERE l.user_id = u.id AND l.deleted_at IS NULL AND l.is_favorite) AS favorites
    ) actual
    WHERE (u.category_count, derived.locations, derived.favorites)
          IS DISTINCT FROM (actual.categories, actual.locations, actual.favorites)
    UNION ALL
    SELECT 'category ' || c.user_id || '/' || c.id || ': locations ' || c.location_count || ' vs ' || actual.locations
           || ', favorites ' || c.favorite_count || ' vs ' || actual.favorites
    FROM categories c
    CROSS JOIN LATERAL (
        SELECT count(*) AS locations, count(*) FILTER (WHERE l.is_favorite) AS favorites
        FROM locations l
        WHERE l.user_id = c.user_id AND l.category_id = c.id AND l.deleted_at IS NULL
    ) actual
    WHERE (c.location_count, c.favorite_count) IS DISTINCT FROM (actual.locations, actual.favorites)
    """

/// One user's ids the random operations pick from (live or not: a write to a missing or deleted
/// one is a legitimate outcome too).
final class CounterUniverse: Sendable {
    let caller: Caller
    let categories: [UUID]
    let locations: [UUID]

    init(caller: Caller, categories: Int, locations: Int) {
        self.caller = caller
        self.categories = DefaultCategories.all.map(\.id) + (0..<categories).map { _ in UUID() }
        self.locations = (0..<locations).map { _ in UUID() }
    }
}

@Suite("Maintained counters equal a fresh count(*) after any mix of writes (migrations/0001 triggers)")
struct CountersTests {
    /// The mismatch lines of `counterMismatchesSQL`, once the pending cascades are settled (the
    /// cascade worker's job: until then a deleted category's locations are live rows that reads
    /// leave out, and no live category counts them).
    static func mismatches(_ pool: ConnectionPool) throws -> [String] {
        let services = LocifyServices(pool: pool, settings: LocifySettings(storageBucket: TestConstants.bucket))
        CascadeWorker(pool: pool, cascades: services.cascades, logger: TestDatabase.logger).settleNow()
        return try pool.withConnection { connection in
            try connection.query(counterMismatchesSQL).map { row throws(PostgresError) in try row.decode(0, as: String.self) }
        }
    }

    /// Applies one random operation; every domain refusal (E007, E008, E001) is a legitimate
    /// outcome that must leave the counters right.
    static func randomOperation(_ services: LocifyServices, _ universe: CounterUniverse, _ random: inout SeededGenerator) throws {
        let caller = universe.caller
        let category = universe.categories.randomElement(using: &random) ?? UUID()
        let otherCategory = universe.categories.randomElement(using: &random) ?? UUID()
        let location = universe.locations.randomElement(using: &random) ?? UUID()
        let favorite = Bool.random(using: &random)
        // Mostly unstamped writes (they always win); now and then a stale one that must lose.
        let stale: Timestamp? = Int.random(in: 0..<8, using: &random) == 0 ? Timestamp(milliseconds: 1_000) : nil
        let draft = try LocationDraft(
            id: location, categoryID: category, name: "L", latitude: 1, longitude: 1, isFavorite: favorite, updatedAt: stale)
        do {
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<12:  // category create, rename, or revival of a tombstone
                _ = try services.categories.create(caller, CategoryDraft(id: category, name: "C", updatedAt: stale))
            case 12..<16:
                _ = try services.categories.replace(caller, CategoryDraft(id: category, name: "Renamed", updatedAt: stale))
            case 16..<21:  // cascade
                _ = try services.categories.delete(caller, id: category, updatedAt: stale, reassignTo: nil)
            case 21..<27:  // reassign
                _ = try services.categories.delete(caller, id: category, updatedAt: stale, reassignTo: otherCategory)
            case 27..<55:  // location create, upsert (move, favorite flip) or resurrection
                _ = try services.locations.create(caller, draft)
            case 55..<80:  // location replacement (move, favorite flip) or resurrection
                _ = try services.locations.replace(caller, draft)
            default:
                _ = try services.locations.delete(caller, id: location, updatedAt: stale)
            }
        } catch let error as LocifyError {
            switch error {
            case .notFound, .conflict, .invalidInput: break
            default: throw error
            }
        }
    }

    @Test("after a random mix of creates, moves, favorite flips, deletes, resurrections, reassigns and cascades, every counter equals count(*)", arguments: [UInt64(7), 11])
    func randomMixSequential(seed: UInt64) throws {
        let db = try LocifyTestDatabase.create(poolSize: 2)
        defer { db.drop() }
        var random = SeededGenerator(seed: seed)
        let universes = (0..<3).map { _ in CounterUniverse(caller: TestConstants.newCaller(), categories: 4, locations: 25) }
        for step in 1...600 {
            let universe = universes[Int.random(in: 0..<universes.count, using: &random)]
            try Self.randomOperation(db.services, universe, &random)
            if step % 150 == 0 {
                #expect(try Self.mismatches(db.pool) == [], "after \(step) operations (seed \(seed))")
            }
        }
        // The mix did reach every kind of state.
        let shape = try db.pool.withConnection { connection in
            try connection.query(
                """
                SELECT count(*) FILTER (WHERE deleted_at IS NULL), count(*) FILTER (WHERE deleted_at IS NOT NULL),
                       count(*) FILTER (WHERE deleted_at IS NULL AND is_favorite), max(version)
                FROM locations
                """
            ).first.map { row throws(PostgresError) in
                (try row.decode(0, as: Int64.self), try row.decode(1, as: Int64.self), try row.decode(2, as: Int64.self), try row.decode(3, as: Int64.self))
            }
        }
        let (live, tombstones, favorites, maxVersion) = try #require(shape)
        #expect(live > 0 && tombstones > 0 && favorites > 0 && maxVersion > 3, "live \(live), tombstones \(tombstones), favorites \(favorites), max version \(maxVersion)")
    }

    @Test("the counters stay exact when several threads mix writes for the same users concurrently")
    func randomMixConcurrent() throws {
        let db = try LocifyTestDatabase.create(poolSize: 4)
        defer { db.drop() }
        let universes = (0..<2).map { _ in CounterUniverse(caller: TestConstants.newCaller(), categories: 3, locations: 15) }
        try runOnThreads(4) { thread in
            var random = SeededGenerator(seed: UInt64(100 + thread))
            for _ in 0..<120 {
                try Self.randomOperation(db.services, universes[Int.random(in: 0..<universes.count, using: &random)], &random)
            }
        }
        #expect(try Self.mismatches(db.pool) == [])
    }

    @Test("the counters stay exact through the tombstone purge and an account deletion")
    func purgeAndAccountDeletion() throws {
        let db = try LocifyTestDatabase.create(poolSize: 2, settings: {
            var settings = LocifySettings(storageBucket: TestConstants.bucket)
            settings.tombstoneRetentionSeconds = 0
            return settings
        }())
        defer { db.drop() }
        var random = SeededGenerator(seed: 5)
        let universes = (0..<2).map { _ in CounterUniverse(caller: TestConstants.newCaller(), categories: 3, locations: 15) }
        for _ in 0..<200 {
            try Self.randomOperation(db.services, universes[Int.random(in: 0..<2, using: &random)], &random)
        }
        let purger = TombstonePurger(pool: db.pool, retentionSeconds: 0, interval: .seconds(3600), logger: TestDatabase.logger)
        Thread.sleep(forTimeInterval: 0.01)
        #expect(purger.purgeNow() > 0)
        #expect(try Self.mismatches(db.pool) == [])
        try db.services.users.delete(universes[0].caller)
        #expect(try Self.mismatches(db.pool) == [])
        for _ in 0..<100 {
            try Self.randomOperation(db.services, universes[1], &random)
        }
        #expect(try Self.mismatches(db.pool) == [])
    }

    @Test("the mismatch query itself notices a wrong counter")
    func mismatchQueryDetects() throws {
        let db = try LocifyTestDatabase.create(poolSize: 1)
        defer { db.drop() }
        let caller = TestConstants.newCaller()
        _ = try db.services.locations.create(
            caller, LocationDraft(id: UUID(), categoryID: DefaultCategories.all[0].id, name: "L", latitude: 0, longitude: 0, isFavorite: true))
        #expect(try Self.mismatches(db.pool) == [])
        try db.pool.withConnection { connection in
            try connection.query("UPDATE categories SET favorite_count = favorite_count + 1 WHERE user_id = \(caller.userID) AND id = \(DefaultCategories.all[0].id)")
            try connection.query("UPDATE users SET category_count = 0 WHERE id = \(caller.userID)")
        }
        #expect(try Self.mismatches(db.pool).count == 2)
    }
}
