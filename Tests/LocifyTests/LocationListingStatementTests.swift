import Foundation
import Postgres
import Testing
import TestSupport

@testable import Locify

/// The listing statement binds the user id once (`me.user_id`), so the generic plan the server's
/// sessions run computes the total once and compares no binds with each other: with the id bound
/// at each use, the plan gained a one-time filter `$1 = $5` and PostgreSQL spent more CPU per
/// `list` page (bench/RESULTS.md, "The one door (issue 37)").
@Suite("Location listing statement: the user id bound once")
struct LocationListingStatementTests {
    /// A listing of each kind: filters, a search, deep reads by offset and after a boundary.
    static func reads(_ caller: Caller) -> [(name: String, query: PostgresQuery)] {
        let category = UUID()
        let page = PageRequest(page: 1, size: 20)
        let start = PageBoundaries.Start(stamp: PageBoundaries.Stamp(changeSeq: 3, account: 4), boundaryID: UUID(), skip: 5)
        return [
            ("all", LocationStore.listQuery(caller, LocationQuery(page: page)).query),
            ("category", LocationStore.listQuery(caller, LocationQuery(page: page, categoryID: category)).query),
            ("favourites", LocationStore.listQuery(caller, LocationQuery(page: page, isFavorite: false, sort: .name)).query),
            ("search", LocationStore.listQuery(caller, LocationQuery(page: page, search: "cafe")).query),
            ("deep", LocationStore.deepListQuery(caller, LocationQuery(page: page), .byOffset).query),
            ("after a boundary", LocationStore.deepListQuery(caller, LocationQuery(page: page, sort: .updatedAt), .from(start)).query),
        ]
    }

    @Test("every listing statement binds the user id exactly once")
    func userBoundOnce() {
        let caller = TestConstants.newCaller()
        for read in Self.reads(caller) {
            #expect(read.query.binds.filter { $0 == PostgresBind(caller.userID) }.count == 1, "\(read.name): \(read.query.sql)")
        }
    }

    @Test("the generic plan of a page computes the total once, with no one-time filter, and reads the page")
    func genericPlan() throws {
        let db = try LocifyTestDatabase.create(poolSize: 1)
        defer { db.drop() }
        let caller = TestConstants.newCaller()
        let category = UUID()
        _ = try db.services.categories.create(caller, CategoryDraft(id: category, name: "Places"))
        for index in 1...3 {
            let draft = try LocationDraft(id: UUID(), categoryID: category, name: "Place \(index)", latitude: 0, longitude: 0)
            _ = try db.services.locations.create(caller, draft)
        }
        try db.pool.withConnection { connection in
            try connection.execute(unsafeSQL: "SET plan_cache_mode = force_generic_plan")
            for (index, query) in [LocationQuery(page: PageRequest(page: 1, size: 2)), LocationQuery(categoryID: category)].enumerated() {
                let read = LocationStore.listQuery(caller, query)
                // The statement prepared by name, so EXPLAIN EXECUTE shows the plan cache's generic
                // plan, the one a pooled session runs; EXECUTE takes its values as literals.
                try connection.execute(unsafeSQL: "PREPARE listing\(index) AS " + read.query.sql)
                let arguments = try read.query.binds.map { bind throws(PostgresError) in
                    try connection.query(PostgresQuery(unsafeSQL: "SELECT quote_nullable($1)", binds: [bind])).map {
                        row throws(PostgresError) in try row.decode(0, as: String.self)
                    }.joined()
                }.joined(separator: ", ")
                let plan = try connection.query(PostgresQuery(unsafeSQL: "EXPLAIN EXECUTE listing\(index)(\(arguments))", binds: []))
                    .map { row throws(PostgresError) in try row.decode(0, as: String.self) }.joined(separator: "\n")
                #expect(plan.components(separatedBy: "InitPlan").count == 2, "\(plan)")
                #expect(!plan.contains("One-Time Filter"), "\(plan)")
                let rows = try #require(try read.decode(connection.query(read.query))).rows
                #expect(rows.first?.total == 3)
                #expect(rows.compactMap(\.record).count == min(3, query.page.size))
            }
        }
    }
}
