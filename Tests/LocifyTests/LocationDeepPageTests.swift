import Foundation
import Postgres
import Testing
import TestSupport

@testable import Locify

/// Deep pages of `GET /v1/locations` are read after remembered boundary rows (`PageBoundaries`);
/// whatever the user writes in between, every page must be exactly the rows an OFFSET over the
/// listing's order gives (openapi.yaml: numbered pages, ties broken by id).
@Suite("Deep location pages read after remembered boundaries stay exact across writes")
struct LocationDeepPageTests {
    /// 900 locations in two categories with tied creation times (three per minute), tied names
    /// (50 distinct) and tied update times, every third a favourite; on one pooled connection
    /// using generic plans, as the server's sessions do.
    private static func seeded() throws -> (LocifyTestDatabase, Caller, UUID, UUID) {
        let db = try LocifyTestDatabase.create(poolSize: 1)
        let caller = TestConstants.newCaller()
        let (first, second) = (UUID(), UUID())
        _ = try db.services.categories.create(caller, CategoryDraft(id: first, name: "First"))
        _ = try db.services.categories.create(caller, CategoryDraft(id: second, name: "Second"))
        try db.pool.withConnection { connection in
            try connection.execute(unsafeSQL: "SET plan_cache_mode = force_generic_plan")
            try connection.query(
                """
                INSERT INTO locations (user_id, id, category_id, name, name_key, search_text, latitude, longitude,
                                       is_favorite, created_at, updated_at, change_seq)
                SELECT \(caller.userID), gen_random_uuid(), CASE WHEN g % 2 = 0 THEN \(first) ELSE \(second) END,
                       'Place ' || (g % 50), 'place ' || (g % 50), 'place', 0, 0, g % 3 = 0,
                       timestamptz '2024-01-01' + (g / 3) * interval '1 minute',
                       timestamptz '2024-06-01' + (g % 97) * interval '1 second', 2
                FROM generate_series(1, 900) g
                """)
            try connection.query("UPDATE users SET change_seq = 2 WHERE id = \(caller.userID)")
        }
        return (db, caller, first, second)
    }

    /// The listing's ids in order, straight from SQL (the truth pages are compared with).
    private static func truth(_ db: LocifyTestDatabase, _ caller: Caller, _ query: LocationQuery) throws -> [UUID] {
        let order: String
        switch query.sort {
        case .createdAt: order = "created_at DESC, id"
        case .updatedAt: order = "updated_at DESC, id"
        case .name: order = "name_key, id"
        }
        return try db.pool.withConnection { connection in
            try connection.query(
                """
                SELECT id FROM locations
                WHERE user_id = \(caller.userID) AND deleted_at IS NULL
                  AND (\(query.categoryID)::uuid IS NULL OR category_id = \(query.categoryID))
                  AND (\(query.isFavorite)::boolean IS NULL OR is_favorite = \(query.isFavorite))
                ORDER BY \(unsafeSQL: order)
                """
            ).map { row throws(PostgresError) in try row.decode(0) }
        }
    }

    /// Reads each deep page of every listing twice (by offset, then after the boundary the first
    /// read left) and checks both against the truth.
    private static func expectExact(
        _ db: LocifyTestDatabase, _ caller: Caller, _ queries: [LocationQuery], sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        for base in queries {
            let all = try truth(db, caller, base)
            for (page, size) in [(21, 20), (22, 20), (5, 100), (9, 100), (41, 21), (100, 20)] {
                var query = base
                query.page = PageRequest(page: page, size: size)
                let start = (page - 1) * size
                let expected = start < all.count ? Array(all[start..<min(start + size, all.count)]) : []
                for attempt in 1...2 {
                    let listed = try db.services.locations.list(caller, query)
                    #expect(
                        listed.records.map(\.id) == expected, "\(base.sort) \(page)x\(size) attempt \(attempt)",
                        sourceLocation: sourceLocation)
                    #expect(listed.totalCount == Int64(all.count), sourceLocation: sourceLocation)
                }
            }
        }
    }

    private static func listings(_ first: UUID) -> [LocationQuery] {
        LocationQuery.Sort.allCases.flatMap { sort in
            [
                LocationQuery(sort: sort), LocationQuery(categoryID: first, sort: sort),
                LocationQuery(isFavorite: true, sort: sort), LocationQuery(isFavorite: false, sort: sort),
            ]
        }
    }

    @Test("a deep page read again comes from its remembered boundary and equals the OFFSET page")
    func boundaryIsUsed() throws {
        let (db, caller, _, _) = try Self.seeded()
        defer { db.drop() }
        let query = LocationQuery(page: PageRequest(page: 30, size: 20))
        let key = PageBoundaries.Key(userID: caller.userID, sort: .createdAt, categoryID: nil, isFavorite: nil)
        #expect(db.services.locations.boundaries.start(key, at: 580) == nil)
        let byOffset = try db.services.locations.list(caller, query)
        let start = try #require(db.services.locations.boundaries.start(key, at: 580))
        #expect(start.skip == 0 && start.boundaryID == byOffset.records.first?.id)
        let fromBoundary = try db.services.locations.list(caller, query)
        #expect(fromBoundary.records.map(\.id) == byOffset.records.map(\.id))
        #expect(fromBoundary.records.map(\.id) == Array(try Self.truth(db, caller, query)[580..<600]))
        // The next page starts one row after the last row of this one.
        #expect(db.services.locations.boundaries.start(key, at: 600)?.skip == 1)
    }

    @Test("the boundary map is bounded: least recently used listings and the shallowest boundaries go first; a new stamp starts over")
    func bounded() {
        let map = PageBoundaries(maxListings: 2, maxBoundaries: 3)
        let stamp = PageBoundaries.Stamp(changeSeq: 7, account: 1)
        func key(_ user: String) -> PageBoundaries.Key { .init(userID: user, sort: .createdAt, categoryID: nil, isFavorite: nil) }
        let ids = (0..<6).map { _ in UUID() }
        map.remember(key("a"), stamp: stamp, offset: 400, ids: Array(ids[0..<3]))
        #expect(map.start(key("a"), at: 401) == .init(stamp: stamp, boundaryID: ids[0], skip: 1))
        #expect(map.start(key("a"), at: 402) == .init(stamp: stamp, boundaryID: ids[2], skip: 0))
        #expect(map.start(key("a"), at: 399) == nil)
        map.remember(key("a"), stamp: stamp, offset: 500, ids: Array(ids[3..<6]))
        #expect(map.start(key("a"), at: 401) == nil)  // offset 400 was the shallowest of four
        #expect(map.start(key("a"), at: 450)?.boundaryID == ids[2])
        map.remember(key("b"), stamp: stamp, offset: 400, ids: [ids[0]])
        _ = map.start(key("a"), at: 500)
        map.remember(key("c"), stamp: stamp, offset: 400, ids: [ids[1]])
        #expect(map.start(key("b"), at: 400) == nil)  // least recently used
        #expect(map.start(key("a"), at: 500) != nil && map.start(key("c"), at: 400) != nil)
        map.remember(key("c"), stamp: .init(changeSeq: 8, account: 1), offset: 600, ids: [ids[2]])
        #expect(map.start(key("c"), at: 500) == nil)
        #expect(map.start(key("c"), at: 600)?.stamp.changeSeq == 8)
    }

    @Test("every sort and filter: deep pages equal the OFFSET pages, with ties, past the end, and on repeat")
    func everyListing() throws {
        let (db, caller, first, _) = try Self.seeded()
        defer { db.drop() }
        try Self.expectExact(db, caller, Self.listings(first))
    }

    @Test("after creates, edits, deletes and a category delete, remembered boundaries are never used stale")
    func afterWrites() throws {
        let (db, caller, first, second) = try Self.seeded()
        defer { db.drop() }
        let listings = Self.listings(first)
        try Self.expectExact(db, caller, listings)
        // A new newest location shifts every created_at page by one row.
        let newest = try LocationDraft(id: UUID(), categoryID: first, name: "Aaa newest", latitude: 0, longitude: 0, isFavorite: true)
        _ = try db.services.locations.create(caller, newest)
        try Self.expectExact(db, caller, listings)
        // An edit moves a row within the updated_at and name orders; a delete removes a row that
        // a remembered boundary may point at.
        let deepRows = try Self.truth(db, caller, LocationQuery())
        let edited = try LocationDraft(id: deepRows[500], categoryID: second, name: "Zzz edited", latitude: 1, longitude: 1, isFavorite: true)
        _ = try db.services.locations.replace(caller, edited)
        _ = try db.services.locations.delete(caller, id: deepRows[420], updatedAt: nil)
        try Self.expectExact(db, caller, listings)
        // Deleting a category moves its locations to the other one.
        _ = try db.services.categories.delete(caller, id: first, updatedAt: nil, reassignTo: second)
        try Self.expectExact(db, caller, listings + [LocationQuery(categoryID: second)])
    }
}
