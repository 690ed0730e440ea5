import Foundation
import JSON
import Testing
import TestSupport
import TestSupportServer

@Suite("Location reads over HTTP: pagination, sorts, filters (openapi.yaml)")
struct LocationsReadTests {
    /// Creates a location with the given times (client minutes) and content; returns its id.
    @discardableResult
    private func place(
        _ user: APIUser, in categoryID: String, name: String = "Place", created: Int, updated: Int, _ extra: JSONObject = [:],
        id: String = newID()
    ) throws -> String {
        var members = extra
        members["created_at"] = .string(clientTime(created))
        members["updated_at"] = .string(clientTime(updated))
        try user.createLocation(id, in: categoryID, name: name, members)
        return id
    }

    @Test("an empty listing: data [] and meta with total_pages 0")
    func emptyListing() throws {
        let user = try APIUser.fresh()
        expectPage(try user.get("/v1/locations"), ids: [], total: 0, pages: 0, page: 1, size: 20)
        expectPage(try user.get("/v1/locations?page=3&size=7"), ids: [], total: 0, pages: 0, page: 3, size: 7)
    }

    @Test("the default sort is created_at, newest first, ties broken by id ascending; sort=created_at is the same")
    func sortByCreatedAt() throws {
        let user = try APIUser.fresh()
        let category = defaultCategories[0].id
        let oldest = try place(user, in: category, created: 1, updated: 50)
        let newest = try place(user, in: category, created: 3, updated: 10)
        let tied = [try place(user, in: category, created: 2, updated: 20), try place(user, in: category, created: 2, updated: 30)].sorted()
        let order = [newest] + tied + [oldest]
        expectPage(try user.get("/v1/locations"), ids: order, total: 4, pages: 1, page: 1, size: 20)
        expectPage(try user.get("/v1/locations?sort=created_at"), ids: order, total: 4, pages: 1, page: 1, size: 20)
    }

    @Test("sort=updated_at: most recently changed first, ties broken by id ascending")
    func sortByUpdatedAt() throws {
        let user = try APIUser.fresh()
        let category = defaultCategories[0].id
        let a = try place(user, in: category, created: 1, updated: 5)
        let b = try place(user, in: category, created: 2, updated: 1)
        let tied = [try place(user, in: category, created: 3, updated: 3), try place(user, in: category, created: 4, updated: 3)].sorted()
        expectPage(try user.get("/v1/locations?sort=updated_at"), ids: [a] + tied + [b], total: 4, pages: 1, page: 1, size: 20)
        // An edit moves a record to the front.
        let edit = try user.put("/v1/locations", locationBody(id: b, categoryID: category, ["updated_at": .string(clientTime(9))]))
        #expect(edit.status == 200)
        expectPage(try user.get("/v1/locations?sort=updated_at"), ids: [b, a] + tied, total: 4, pages: 1, page: 1, size: 20)
        let newest = try place(user, in: category, created: 0, updated: 0)
        expectPage(try user.get("/v1/locations?sort=updated_at&size=2&page=3"), ids: [newest], total: 5, pages: 3, page: 3, size: 2)
    }

    @Test("sort=name: A-Z case-insensitively, ties broken by id ascending")
    func sortByName() throws {
        let user = try APIUser.fresh()
        let category = defaultCategories[0].id
        let zebra = try place(user, in: category, name: "zebra", created: 1, updated: 1)
        let apple = try place(user, in: category, name: "Apple", created: 2, updated: 2)
        let twins = [try place(user, in: category, name: "mango", created: 3, updated: 3), try place(user, in: category, name: "MANGO", created: 4, updated: 4)].sorted()
        let banana = try place(user, in: category, name: "banana", created: 5, updated: 5)
        let accent = try place(user, in: category, name: "\u{C9}clair", created: 6, updated: 6)
        let lowerAccent = try place(user, in: category, name: "\u{E9}clair", created: 7, updated: 7)
        let response = try user.get("/v1/locations?sort=name")
        let listed = ids(response)
        #expect(Array(listed.prefix(5)) == [apple, banana] + twins + [zebra], "\(response.text)")
        // Case-insensitive beyond ASCII: the two spellings of "éclair" sort together.
        #expect(Set(listed.suffix(2)) == [accent, lowerAccent] && listed.count == 7)
        let eclairs = [accent, lowerAccent].sorted()
        #expect(Array(listed.suffix(2)) == eclairs, "equal keys are ordered by id")
    }

    @Test("an unknown sort is E001 naming sort")
    func unknownSort() throws {
        let user = try APIUser.fresh()
        for sort in ["name_desc", "NAME", "-created_at", "", "id"] {
            expectError(try user.get("/v1/locations?sort=\(sort)"), 400, "E001", field: "sort")
        }
    }

    @Test("pagination: meta with total_pages = ceil(total/size), pages never overlap even when every sort key ties, a page past the end is []")
    func paginationWithTies() throws {
        let user = try APIUser.fresh()
        let category = defaultCategories[2].id
        var all: [String] = []
        for _ in 0..<7 { all.append(try place(user, in: category, name: "Same", created: 0, updated: 0)) }
        all.sort()
        for sort in ["created_at", "updated_at", "name"] {
            var walked: [String] = []
            for page in 1...4 {
                let response = try user.get("/v1/locations?sort=\(sort)&size=2&page=\(page)")
                let expected = Array(all[(page - 1) * 2..<min(page * 2, 7)])
                expectPage(response, ids: expected, total: 7, pages: 4, page: page, size: 2)
                walked += ids(response)
            }
            #expect(walked == all, "sort \(sort)")
            expectPage(try user.get("/v1/locations?sort=\(sort)&size=2&page=5"), ids: [], total: 7, pages: 4, page: 5, size: 2)
        }
        expectPage(try user.get("/v1/locations?size=7"), ids: all, total: 7, pages: 1, page: 1, size: 7)
        expectPage(try user.get("/v1/locations?size=100"), ids: all, total: 7, pages: 1, page: 1, size: 100)
        expectPage(try user.get("/v1/locations?size=1&page=7"), ids: [all[6]], total: 7, pages: 7, page: 7, size: 1)
        expectPage(try user.get("/v1/locations?page=123456789"), ids: [], total: 7, pages: 1, page: 123_456_789, size: 20)
    }

    @Test("page and size out of range, or not integers, are E001 naming the parameter")
    func pagingOutOfRange() throws {
        let user = try APIUser.fresh()
        for (query, field) in outOfRangePaging {
            expectError(try user.get("/v1/locations?\(query)"), 400, "E001", field: field)
            expectError(try user.get("/v1/locations?category_id=\(defaultCategories[0].id)&\(query)"), 400, "E001", field: field)
        }
    }

    @Test("category_id filter: only that category's live locations with their total; upper-case accepted; unknown, deleted or another user's category is an empty page; malformed E002")
    func categoryFilter() throws {
        let user = try APIUser.fresh()
        let home = newID()
        let work = newID()
        try user.createCategory(home)
        try user.createCategory(work)
        let inHome = [try place(user, in: home, created: 3, updated: 3), try place(user, in: home, created: 2, updated: 2)]
        let gone = try place(user, in: home, created: 1, updated: 1)
        expectNoContent(try user.delete("/v1/locations/\(gone)"))
        let inWork = try place(user, in: work, created: 4, updated: 4)
        expectPage(try user.get("/v1/locations?category_id=\(home)"), ids: inHome, total: 2, pages: 1, page: 1, size: 20)
        expectPage(try user.get("/v1/locations?category_id=\(home.uppercased())&size=1&page=2"), ids: [inHome[1]], total: 2, pages: 2, page: 2, size: 1)
        expectPage(try user.get("/v1/locations?category_id=\(work)"), ids: [inWork], total: 1, pages: 1, page: 1, size: 20)
        expectPage(try user.get("/v1/locations?category_id=\(newID())"), ids: [], total: 0, pages: 0, page: 1, size: 20)
        let other = try APIUser.fresh()
        let othersCategory = newID()
        try other.createCategory(othersCategory)
        try other.createLocation(in: othersCategory)
        expectPage(try user.get("/v1/locations?category_id=\(othersCategory)"), ids: [], total: 0, pages: 0, page: 1, size: 20)
        expectNoContent(try user.delete("/v1/categories/\(work)"))
        expectPage(try user.get("/v1/locations?category_id=\(work)"), ids: [], total: 0, pages: 0, page: 1, size: 20)
        for malformed in ["home", "", "\(home)0", queryEncoded("\u{0}")] {
            expectError(try user.get("/v1/locations?category_id=\(malformed)"), 400, "E002", field: "category_id")
        }
    }

    @Test("is_favorite filter: true or false with their totals; any other value is E001")
    func favoriteFilter() throws {
        let user = try APIUser.fresh()
        let category = defaultCategories[3].id
        let favorites = [try place(user, in: category, created: 5, updated: 5, ["is_favorite": true]), try place(user, in: category, created: 4, updated: 4, ["is_favorite": true])]
        let plain = [try place(user, in: category, created: 3, updated: 3), try place(user, in: category, created: 2, updated: 2, ["is_favorite": false])]
        let deletedFavorite = try place(user, in: category, created: 1, updated: 1, ["is_favorite": true])
        expectNoContent(try user.delete("/v1/locations/\(deletedFavorite)"))
        expectPage(try user.get("/v1/locations?is_favorite=true"), ids: favorites, total: 2, pages: 1, page: 1, size: 20)
        expectPage(try user.get("/v1/locations?is_favorite=false"), ids: plain, total: 2, pages: 1, page: 1, size: 20)
        expectPage(try user.get("/v1/locations?is_favorite=true&size=1&page=2"), ids: [favorites[1]], total: 2, pages: 2, page: 2, size: 1)
        // Flipping the flag moves the record between the two filters.
        let flipped = try user.put(
            "/v1/locations/\(plain[0])", locationBody(id: nil, categoryID: category, ["is_favorite": true, "updated_at": .string(clientTime(9))]))
        #expect(flipped.status == 200)
        expectPage(try user.get("/v1/locations?is_favorite=true"), ids: [favorites[0], favorites[1], plain[0]], total: 3, pages: 1, page: 1, size: 20)
        expectPage(try user.get("/v1/locations?is_favorite=false"), ids: [plain[1]], total: 1, pages: 1, page: 1, size: 20)
        for bad in ["yes", "1", "0", "TRUE", "False", "", "true%00"] {
            expectError(try user.get("/v1/locations?is_favorite=\(bad)"), 400, "E001", field: "is_favorite")
        }
    }

    @Test("q filter: case-insensitive substring of name, address or description; % and _ are literal; empty q is no filter")
    func searchFilter() throws {
        let user = try APIUser.fresh()
        let category = defaultCategories[1].id
        let byName = try place(user, in: category, name: "Caf\u{E9} de FLORE", created: 6, updated: 6)
        let byAddress = try place(user, in: category, name: "Shop", created: 5, updated: 5, ["address": "172 Boulevard Saint-Germain"])
        let byDescription = try place(user, in: category, name: "Bar", created: 4, updated: 4, ["description": "Near the FLOWER market"])
        let percent = try place(user, in: category, name: "100% Arabica", created: 3, updated: 3)
        let underscore = try place(user, in: category, name: "snake_case bistro", created: 2, updated: 2)
        let plain = try place(user, in: category, name: "Plain", created: 1, updated: 1, ["address": "1 Main St", "description": "nothing"])
        let deleted = try place(user, in: category, name: "Flore deleted", created: 0, updated: 0)
        expectNoContent(try user.delete("/v1/locations/\(deleted)"))
        let everything = [byName, byAddress, byDescription, percent, underscore, plain]
        func search(_ q: String, _ extra: String = "") throws -> TestResponse {
            try user.get("/v1/locations?q=\(queryEncoded(q))\(extra)")
        }
        expectPage(try search("flo"), ids: [byName, byDescription], total: 2, pages: 1, page: 1, size: 20)
        expectPage(try search("FLORE"), ids: [byName], total: 1, pages: 1, page: 1, size: 20)
        expectPage(try search("CAF\u{C9}"), ids: [byName], total: 1, pages: 1, page: 1, size: 20)
        expectPage(try search("saint-germain"), ids: [byAddress], total: 1, pages: 1, page: 1, size: 20)
        expectPage(try search("flower MARKET"), ids: [byDescription], total: 1, pages: 1, page: 1, size: 20)
        expectPage(try search("%"), ids: [percent], total: 1, pages: 1, page: 1, size: 20)
        expectPage(try search("0%"), ids: [percent], total: 1, pages: 1, page: 1, size: 20)
        expectPage(try search("_"), ids: [underscore], total: 1, pages: 1, page: 1, size: 20)
        expectPage(try search("e_c"), ids: [underscore], total: 1, pages: 1, page: 1, size: 20)
        expectPage(try search("s_op"), ids: [], total: 0, pages: 0, page: 1, size: 20)
        expectPage(try search("%a%"), ids: [], total: 0, pages: 0, page: 1, size: 20)
        expectPage(try search("deleted"), ids: [], total: 0, pages: 0, page: 1, size: 20)
        expectPage(try search("nowhere"), ids: [], total: 0, pages: 0, page: 1, size: 20)
        expectPage(try search(""), ids: everything, total: 6, pages: 1, page: 1, size: 20)
        expectPage(try user.get("/v1/locations?q="), ids: everything, total: 6, pages: 1, page: 1, size: 20)
        expectPage(try search("a", "&size=2&page=2&sort=name"), ids: [byName, plain], total: 6, pages: 3, page: 2, size: 2)
        expectPage(try search("o", "&sort=name"), ids: [byDescription, byName, plain, byAddress, underscore], total: 5, pages: 1, page: 1, size: 20)
        expectError(try search("a\u{0}b"), 400, "E001", field: "q")
    }

    @Test("filters combine: category_id, is_favorite and q together, with sort and paging")
    func combinedFilters() throws {
        let user = try APIUser.fresh()
        let home = newID()
        let work = newID()
        try user.createCategory(home)
        try user.createCategory(work)
        let match1 = try place(user, in: home, name: "Garden A", created: 1, updated: 1, ["is_favorite": true])
        let match2 = try place(user, in: home, name: "garden b", created: 2, updated: 2, ["is_favorite": true])
        let notFavorite = try place(user, in: home, name: "Garden C", created: 3, updated: 3)
        let elsewhere = try place(user, in: work, name: "Garden D", created: 4, updated: 4, ["is_favorite": true])
        try place(user, in: home, name: "Kitchen", created: 5, updated: 5, ["is_favorite": true])
        let query = "/v1/locations?category_id=\(home)&is_favorite=true&q=GARDEN"
        expectPage(try user.get(query), ids: [match2, match1], total: 2, pages: 1, page: 1, size: 20)
        expectPage(try user.get(query + "&sort=name"), ids: [match1, match2], total: 2, pages: 1, page: 1, size: 20)
        expectPage(try user.get(query + "&sort=name&size=1&page=2"), ids: [match2], total: 2, pages: 2, page: 2, size: 1)
        expectPage(try user.get("/v1/locations?category_id=\(home)&is_favorite=false"), ids: [notFavorite], total: 1, pages: 1, page: 1, size: 20)
        expectPage(
            try user.get("/v1/locations?category_id=\(work)&is_favorite=true&sort=updated_at&q=d"), ids: [elsewhere], total: 1, pages: 1,
            page: 1, size: 20)
        expectPage(try user.get("/v1/locations?category_id=\(work)&is_favorite=false"), ids: [], total: 0, pages: 0, page: 1, size: 20)
    }

    @Test("GET /v1/locations/{id}: 200 with the record; unknown or deleted E007; malformed E002")
    func getOne() throws {
        let user = try APIUser.fresh()
        let id = newID()
        let created = try user.createLocation(id, in: defaultCategories[0].id, ["updated_at": .string(clientTime(0))])
        expectRecord(try user.get("/v1/locations/\(id)"), 200, created)
        expectRecord(try user.get("/v1/locations/\(id.uppercased())"), 200, created)
        expectError(try user.get("/v1/locations/\(newID())"), 404, "E007")
        expectError(try user.get("/v1/locations/123"), 400, "E002", field: "id")
        expectNoContent(try user.delete("/v1/locations/\(id)"))
        expectError(try user.get("/v1/locations/\(id)"), 404, "E007")
        expectPage(try user.get("/v1/locations"), ids: [], total: 0, pages: 0, page: 1, size: 20)
    }
}
