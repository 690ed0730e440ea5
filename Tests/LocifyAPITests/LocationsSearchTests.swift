import Foundation
import JSON
import Testing
import TestSupport

/// `q` of `GET /v1/locations` is a case-insensitive substring of name, address or description in
/// which every character is literal (openapi.yaml), whatever the pattern syntax the
/// database matches it with: LIKE's `%`, `_` and its escape character `\` among them.
@Suite("Location search over HTTP: LIKE metacharacters are literal, short queries, fields apart")
struct LocationsSearchTests {
    /// Creates one location per name (the name its only text unless `fields` gives more) and
    /// returns the ids by name.
    private func places(_ user: APIUser, _ names: [String], fields: [String: JSONObject] = [:]) throws -> [String: String] {
        let category = newID()
        try user.createCategory(category)
        var ids: [String: String] = [:]
        for name in names {
            let record = try user.createLocation(in: category, name: name, fields[name] ?? [:])
            ids[name] = record["id"]?.stringValue
        }
        return ids
    }

    /// Expects `q` to find exactly `names` (any order), with an exact total.
    private func expectFound(
        _ user: APIUser, _ q: String, _ names: [String], in ids: [String: String],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let response = try user.get("/v1/locations?size=100&q=\(queryEncoded(q))")
        #expect(response.status == 200, "q=\(q): \(response.text)", sourceLocation: sourceLocation)
        let found = response.object["data"]?.arrayValue?.compactMap { $0.objectValue?["id"]?.stringValue } ?? []
        #expect(Set(found) == Set(names.compactMap { ids[$0] }), "q=\(q)", sourceLocation: sourceLocation)
        #expect(found.count == names.count, "q=\(q)", sourceLocation: sourceLocation)
        #expect(response.meta["total_count"] == .number(Double(names.count)), "q=\(q)", sourceLocation: sourceLocation)
    }

    @Test("%, _ and \\ in q match only themselves, alone, doubled, escaped-looking and at either end")
    func metacharacters() throws {
        let user = try APIUser.fresh()
        let names = [
            #"50% off"#, #"50x off"#, #"5_0 bar"#, #"5x0 bar"#, #"back\slash"#, #"back\\double"#, #"backslash"#,
            #"pre\%cent"#, #"pre%cent"#, #"pre\_score"#, #"pre_score"#, #"ends with \"#, #"100%"#, #"a%b_c\d"#, #"axbxcxd"#,
        ]
        let ids = try places(user, names)
        let cases: [(String, [String])] = [
            ("%", [#"50% off"#, #"pre\%cent"#, #"pre%cent"#, #"100%"#, #"a%b_c\d"#]),
            ("%%", []),
            ("0% o", [#"50% off"#]),
            ("_", [#"5_0 bar"#, #"pre\_score"#, #"pre_score"#, #"a%b_c\d"#]),
            ("5_0", [#"5_0 bar"#]),
            ("__", []),
            (#"\"#, [#"back\slash"#, #"back\\double"#, #"pre\%cent"#, #"pre\_score"#, #"ends with \"#, #"a%b_c\d"#]),
            (#"\\"#, [#"back\\double"#]),
            (#"k\s"#, [#"back\slash"#]),
            (#"\%"#, [#"pre\%cent"#]),
            (#"\_"#, [#"pre\_score"#]),
            (#"e%c"#, [#"pre%cent"#]),
            (#"h \"#, [#"ends with \"#]),
            ("100%", ["100%"]),
            (#"%b_c\"#, [#"a%b_c\d"#]),
            (#"a%b_c\d"#, [#"a%b_c\d"#]),
            ("x%", []),
            ("b%c", []),
        ]
        for (q, expected) in cases {
            try expectFound(user, q, expected, in: ids)
        }
    }

    @Test("one- and two-character queries (no trigram to look up) find every containing record, case-insensitively")
    func shortQueries() throws {
        let user = try APIUser.fresh()
        let names = ["Zebra", "lazy", "ZZ top", "Quiet", "éclair", "Ünïcode", "😀 smile", "日本橋", "Plain"]
        let ids = try places(user, names)
        let cases: [(String, [String])] = [
            ("z", ["Zebra", "lazy", "ZZ top"]),
            ("Z", ["Zebra", "lazy", "ZZ top"]),
            ("zz", ["ZZ top"]),
            ("az", ["lazy"]),
            ("É", ["éclair"]),
            ("ü", ["Ünïcode"]),
            ("😀", ["😀 smile"]),
            ("本", ["日本橋"]),
            ("日本", ["日本橋"]),
            (" s", ["😀 smile"]),
            ("q", ["Quiet"]),
            ("x", []),
        ]
        for (q, expected) in cases {
            try expectFound(user, q, expected, in: ids)
        }
    }

    @Test("a query never matches across two fields, but matches in any one of them")
    func fieldsApart() throws {
        let user = try APIUser.fresh()
        let fields: [String: JSONObject] = [
            "Cafe": ["address": "Rue Royale", "description": "Breakfast ALL day"],
            "Bakery Royale": [:],
        ]
        let ids = try places(user, ["Cafe", "Bakery Royale"], fields: fields)
        try expectFound(user, "cafe", ["Cafe"], in: ids)
        try expectFound(user, "royale", ["Cafe", "Bakery Royale"], in: ids)
        try expectFound(user, "all day", ["Cafe"], in: ids)
        try expectFound(user, "cafe rue", [], in: ids)
        try expectFound(user, "royale break", [], in: ids)
        try expectFound(user, "y r", ["Bakery Royale"], in: ids)
    }

    @Test("total_count counts every match while the page holds size of them")
    func totalAndPaging() throws {
        let user = try APIUser.fresh()
        let category = newID()
        try user.createCategory(category)
        for index in 0..<7 {
            try user.createLocation(in: category, name: "Match \(index) tram stop")
            try user.createLocation(in: category, name: "Other \(index)")
        }
        let page = try user.get("/v1/locations?q=TRAM%20STOP&size=3&page=3")
        #expect(page.status == 200)
        #expect(page.meta["total_count"] == 7 && page.meta["total_pages"] == 3)
        #expect(page.object["data"]?.arrayValue?.count == 1)
    }
}
