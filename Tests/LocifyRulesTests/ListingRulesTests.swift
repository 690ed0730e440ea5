import LocifyRules
import Testing

/// The listing rules on their own (their equality with PostgreSQL: LocifyTests' ListingRulesSQLTests).
@Suite("ListingRules: q, the search text and the name order")
struct ListingRulesTests {
    @Test("q: empty is no filter, control characters and more than 255 code points refused as E001 on q, spaces kept")
    func searchTerm() throws {
        #expect(try ListingRules.searchTerm(nil) == nil)
        #expect(try ListingRules.searchTerm("") == nil)
        #expect(try ListingRules.searchTerm(" ") == " ")
        #expect(try ListingRules.searchTerm(String(repeating: "é", count: 255))?.unicodeScalars.count == 255)
        #expect(throws: RuleViolation.invalidInput(field: "q", reason: "must be at most 255 characters")) {
            try ListingRules.searchTerm(String(repeating: "é", count: 256))
        }
        #expect(throws: RuleViolation.invalidInput(field: "q", reason: "must not contain control characters")) {
            try ListingRules.searchTerm("a\nb")
        }
    }

    @Test("the search is a case-insensitive literal substring of code points, never across fields")
    func matches() {
        let text = ListingRules.searchText(name: "Café_Noir", address: "50% OFF", description: nil)
        #expect(text == "café_noir\n50% off\n")
        #expect(ListingRules.matches(searchText: text, term: "CAFÉ"))
        #expect(ListingRules.matches(searchText: text, term: "_n"))
        #expect(!ListingRules.matches(searchText: text, term: "é%"), "% is not a wildcard")
        #expect(!ListingRules.matches(searchText: text, term: "e_noir"), "_ is not a wildcard")
        #expect(!ListingRules.matches(searchText: text, term: "cafe\u{301}"), "no canonical equivalence, as LIKE")
        #expect(!ListingRules.matches(searchText: text, term: "noir 50"), "fields are apart")
        #expect(ListingRules.matches(searchText: ListingRules.searchText(name: "Cafe\u{301}", address: nil, description: nil), term: "e"))
    }

    @Test("names order by the bytes of their lower-cased form, not by Swift's String order")
    func nameOrder() {
        #expect(ListingRules.nameKeyPrecedes("b", "é"))
        #expect(ListingRules.nameKeyPrecedes("e\u{301}", "é"), "decomposed before precomposed, as COLLATE \"C\"")
        #expect(!ListingRules.nameKeyPrecedes("é", "é"))
        #expect(ListingRules.nameKeyPrecedes("z", "😀"))
    }
}
