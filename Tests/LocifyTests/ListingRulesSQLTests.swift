import Foundation
import LocifyRules
import Postgres
import Testing
import TestSupport

@testable import Locify

/// `ListingRules` is how LocifyClient lists offline what the server lists in SQL: the order of
/// `name_key COLLATE "C"` and the escaped `LIKE` of `q` on `search_text`. Both are checked here
/// against PostgreSQL itself, on texts chosen to tell the candidate rules apart (cases, accents
/// precomposed and decomposed, letters whose case mapping changes length, LIKE's wildcards and
/// escape, characters beyond the BMP).
@Suite("ListingRules: the client's name order and search are PostgreSQL's")
struct ListingRulesSQLTests {
    static let alphabet: [String] = [
        "a", "A", "B", "e", "é", "É", "e\u{301}", "E\u{301}", "ß", "ẞ", "İ", "i", "ı", "%", "_", "\\", " ", "z", "Σ", "ς", "ǅ", "😀",
        "Å", "Å", "'", "\t",
    ]

    static func texts(seed: UInt64, count: Int) -> [String] {
        var random = SeededGenerator(seed: seed)
        return (0..<count).map { _ in
            (0..<Int.random(in: 0...5, using: &random)).map { _ in alphabet.randomElement(using: &random) ?? "a" }.joined()
        }
    }

    @Test("ordering lower-cased names with nameKeyPrecedes is PostgreSQL's ORDER BY ... COLLATE \"C\"")
    func nameOrder() throws {
        let db = try LocifyTestDatabase.create(poolSize: 1)
        defer { db.drop() }
        let keys = Self.texts(seed: 7, count: 400).map(TextRules.sortKey)
        let sorted = try db.pool.withConnection { connection in
            try connection.query("SELECT k FROM unnest(\(keys)::text[]) k ORDER BY k COLLATE \"C\"").map { row throws(PostgresError) in
                try row.decode(0, as: String.self)
            }
        }
        // Compared as bytes: Swift's String equality would call canonically equivalent keys equal.
        #expect(sorted.map { Array($0.utf8) } == keys.sorted(by: ListingRules.nameKeyPrecedes).map { Array($0.utf8) })
    }

    @Test("matches(searchText:term:) is the server's escaped LIKE of the lower-cased term")
    func search() throws {
        let db = try LocifyTestDatabase.create(poolSize: 1)
        defer { db.drop() }
        let fields = Self.texts(seed: 11, count: 90)
        let texts: [String] = stride(from: 0, to: fields.count, by: 3).map { (index: Int) -> String in
            let description: String? = fields[index + 2].isEmpty ? nil : fields[index + 2]
            return ListingRules.searchText(name: fields[index], address: fields[index + 1], description: description)
        }
        let specialTerms: [String] = ["e", "é", "E\u{301}", "%", "_", "\\", "ss"]
        let terms: [String] = Self.texts(seed: 13, count: 60).filter { !$0.contains("\t") && !$0.isEmpty } + specialTerms
        let patterns = terms.map { LocationStore.substringPattern(ListingRules.searchKey($0)) }
        let found = try db.pool.withConnection { connection in
            try connection.query(
                """
                SELECT t.i, p.j, t.s LIKE p.p FROM unnest(\(texts)::text[]) WITH ORDINALITY t(s, i),
                unnest(\(patterns)::text[]) WITH ORDINALITY p(p, j)
                """
            ).map { row throws(PostgresError) in
                (Int(try row.decode(0, as: Int64.self)) - 1, Int(try row.decode(1, as: Int64.self)) - 1, try row.decode(2, as: Bool.self))
            }
        }
        #expect(found.count == texts.count * terms.count)
        var matches = 0
        for (text, term, like) in found {
            #expect(
                ListingRules.matches(searchText: texts[text], term: terms[term]) == like, "\(texts[text].debugDescription) ~ \(terms[term].debugDescription)")
            if like { matches += 1 }
        }
        #expect(matches > terms.count, "the texts match some terms")
    }
}
