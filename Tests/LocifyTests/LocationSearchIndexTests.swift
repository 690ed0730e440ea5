import Foundation
import LocifyRules
import Postgres
import Testing
import TestSupport

@testable import Locify

/// The `q` filter is served by the trigram index `locations_live_search` (migration 0003) and
/// finds through it exactly what a literal substring test finds.
@Suite("Location search: LIKE patterns and the trigram index")
struct LocationSearchIndexTests {
    @Test("the pattern escapes %, _ and \\ and wraps the text in %...%")
    func pattern() {
        #expect(LocationStore.substringPattern("abc") == "%abc%")
        #expect(LocationStore.substringPattern("") == "%%")
        #expect(LocationStore.substringPattern("50%") == #"%50\%%"#)
        #expect(LocationStore.substringPattern("a_b") == #"%a\_b%"#)
        #expect(LocationStore.substringPattern(#"a\b"#) == #"%a\\b%"#)
        #expect(LocationStore.substringPattern(#"\%_\"#) == #"%\\\%\_\\%"#)
        #expect(LocationStore.substringPattern("é😀") == "%é😀%")
    }

    /// Names whose matches depend on every character being literal, in several scripts.
    static let names = [
        "Café de Flore", "CAFE NOIR", #"50% off\sale"#, "snake_case bistro", "snakeXcase bistro", "Émile Zola",
        "😀 smile corner", "日本橋 station", "Straße 12", #"back\slash"#, "plain place",
    ]

    /// Queries and the names they must find (compared with a literal substring test).
    static let queries = [
        "café", "CAFE", "afe", "% off", #"f\sa"#, "e_c", "ex", "émile", "ZOLA", "😀 smi", "日本橋", "本橋 s", "straße",
        #"k\s"#, "ace", "zzz", "a p", "bistro",
    ]

    /// The queries holding a run of three letters or digits: a trigram the index can look up.
    static let indexedQueries: Set = ["café", "CAFE", "afe", "% off", "émile", "ZOLA", "😀 smi", "straße", "ace", "zzz", "bistro"]

    @Test("with the trigram index forced, every query finds exactly the literal substring matches")
    func forcedIndex() throws {
        let db = try LocifyTestDatabase.create(poolSize: 1)
        defer { db.drop() }
        let caller = TestConstants.newCaller()
        let category = UUID()
        _ = try db.services.categories.create(caller, CategoryDraft(id: category, name: "Places"))
        for name in Self.names {
            let draft = try LocationDraft(
                id: UUID(), categoryID: category, name: name, description: "Seen in \(name.count) minutes", latitude: 0, longitude: 0)
            _ = try db.services.locations.create(caller, draft)
        }
        try db.pool.withConnection { connection in
            // The test is about what the queries find, not their speed: on a loaded machine (or
            // under a sanitizer) the 20,000-row insert can outlast the pool's statement timeout.
            try connection.execute(unsafeSQL: "SET statement_timeout = 0")
            // 20,000 rows no query matches, so the user's rows are many and a search is selective,
            // as at 100,000 locations; and no plain scan of them, so any query with a trigram goes
            // through the GIN index.
            try connection.query(
                """
                INSERT INTO locations (user_id, id, category_id, name, name_key, search_text, latitude, longitude,
                                       created_at, updated_at, change_seq)
                SELECT \(caller.userID), gen_random_uuid(), \(category), 'Filler ' || g, 'filler ' || g, 'filler ' || g || E'\n\n',
                       0, 0, now(), now(), 1
                FROM generate_series(1, 20000) g
                """)
            try connection.execute(
                unsafeSQL: """
                    ANALYZE locations; SET enable_seqscan = off; SET enable_indexscan = off; SET enable_indexonlyscan = off;
                    SET plan_cache_mode = force_custom_plan
                    """)
            for q in Self.queries {
                let query = LocationQuery(page: PageRequest(page: 1, size: 100), search: q)
                let read = LocationStore.listQuery(caller, query)
                let statement = read.query
                let plan = try connection.query(
                    PostgresQuery(unsafeSQL: "EXPLAIN " + statement.sql, binds: statement.binds)
                ).map { row throws(PostgresError) in try row.decode(0, as: String.self) }.joined(separator: "\n")
                if Self.indexedQueries.contains(q) {
                    #expect(plan.contains("locations_live_search"), "q=\(q): \(plan)")
                }
                let rows = try #require(try read.decode(connection.query(statement))).rows
                let found = rows.compactMap { $0.record?.name }
                let expected = Self.names.filter { name in
                    let text = [name, "Seen in \(name.count) minutes"].map(TextRules.sortKey)
                    return text.contains { $0.contains(TextRules.sortKey(q)) }
                }
                #expect(Set(found) == Set(expected), "q=\(q)")
                #expect(rows.first?.total == Int64(expected.count), "q=\(q)")
            }
        }
    }
}
