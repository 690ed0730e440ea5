import Foundation
import JSON
import Testing
import TestSupport
import TestSupportServer

/// The ids of a list response's records, in order.
func ids(_ response: TestResponse) -> [String] {
    response.data.compactMap { $0.objectValue?["id"]?.stringValue }
}

/// Expects a list response: 200, `meta` exactly as given, and `data` holding `expectedIDs` in order.
func expectPage(
    _ response: TestResponse, ids expectedIDs: [String], total: Int, pages: Int, page: Int, size: Int,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(response.status == 200, "status; body: \(response.text)", sourceLocation: sourceLocation)
    #expect(Set(response.object.keys) == ["data", "meta"], sourceLocation: sourceLocation)
    let meta: JSONObject = [
        "total_count": .number(Double(total)), "total_pages": .number(Double(pages)), "page": .number(Double(page)),
        "size": .number(Double(size)),
    ]
    #expect(response.meta == meta, "meta; body: \(response.text)", sourceLocation: sourceLocation)
    #expect(ids(response) == expectedIDs, sourceLocation: sourceLocation)
}

/// The page/size values `GET` listings refuse with E001, and the parameter each one names.
let outOfRangePaging: [(query: String, field: String)] = [
    ("page=0", "page"), ("page=-1", "page"), ("page=abc", "page"), ("page=1.5", "page"), ("page=", "page"), ("page=%00", "page"),
    ("size=0", "size"), ("size=101", "size"), ("size=-20", "size"), ("size=ten", "size"), ("size=", "size"), ("size=1e2", "size"),
]

@Suite("Category reads over HTTP (openapi.yaml)")
struct CategoriesReadTests {
    @Test("GET /v1/categories lists live categories by name, case-insensitively, then by id, with meta")
    func listOrder() throws {
        let user = try APIUser.fresh()
        let twins = [newID(), newID()].sorted()
        try user.createCategory(twins[1], name: "apple")
        try user.createCategory(twins[0], name: "Apple")
        let banana = newID()
        try user.createCategory(banana, name: "banana")
        let cherry = newID()
        try user.createCategory(cherry, name: "CHERRY")
        let gone = newID()
        try user.createCategory(gone, name: "Aardvark")
        expectNoContent(try user.delete("/v1/categories/\(gone)"))
        let byName = Dictionary(uniqueKeysWithValues: defaultCategories.map { ($0.name, $0.id) })
        let order = [
            twins[0], twins[1], banana, try #require(byName["Cafe"]), cherry, try #require(byName["Favorites"]),
            try #require(byName["Restaurant"]), try #require(byName["Tourist Attraction"]),
        ]
        let response = try user.get("/v1/categories")
        expectPage(response, ids: order, total: 8, pages: 1, page: 1, size: 20)
        #expect(response.data.compactMap { $0.objectValue?["name"]?.stringValue } == [
            "Apple", "apple", "banana", "Cafe", "CHERRY", "Favorites", "Restaurant", "Tourist Attraction",
        ])
        // Paging through with size 3 yields the same order, without overlap.
        expectPage(try user.get("/v1/categories?size=3"), ids: Array(order[0..<3]), total: 8, pages: 3, page: 1, size: 3)
        expectPage(try user.get("/v1/categories?size=3&page=2"), ids: Array(order[3..<6]), total: 8, pages: 3, page: 2, size: 3)
        expectPage(try user.get("/v1/categories?page=3&size=3"), ids: Array(order[6..<8]), total: 8, pages: 3, page: 3, size: 3)
        expectPage(try user.get("/v1/categories?page=4&size=3"), ids: [], total: 8, pages: 3, page: 4, size: 3)
        expectPage(try user.get("/v1/categories?page=1000000&size=100"), ids: [], total: 8, pages: 1, page: 1_000_000, size: 100)
        for size in 1...8 {
            var walked: [String] = []
            for page in 1...((8 + size - 1) / size) {
                walked += ids(try user.get("/v1/categories?size=\(size)&page=\(page)"))
            }
            #expect(walked == order, "size \(size)")
        }
    }

    @Test("total_pages is ceil(total_count / size): 0 when there is nothing")
    func totalPagesWhenEmpty() throws {
        let user = try APIUser.fresh()
        for (_, id) in defaultCategories {
            expectNoContent(try user.delete("/v1/categories/\(id)"))
        }
        expectPage(try user.get("/v1/categories"), ids: [], total: 0, pages: 0, page: 1, size: 20)
        expectPage(try user.get("/v1/categories?page=2&size=1"), ids: [], total: 0, pages: 0, page: 2, size: 1)
        try user.createCategory(newID())
        expectPage(try user.get("/v1/categories?page=2&size=100"), ids: [], total: 1, pages: 1, page: 2, size: 100)
    }

    @Test("page and size out of range, or not integers, are E001 naming the parameter")
    func pagingOutOfRange() throws {
        let user = try APIUser.fresh()
        for (query, field) in outOfRangePaging {
            expectError(try user.get("/v1/categories?\(query)"), 400, "E001", field: field)
        }
        let defaultsByName = defaultCategories.sorted { $0.name < $1.name }.map(\.id)
        expectPage(try user.get("/v1/categories?size=100&page=1"), ids: defaultsByName, total: 4, pages: 1, page: 1, size: 100)
        expectPage(try user.get("/v1/categories?size=1&page=4"), ids: [defaultsByName[3]], total: 4, pages: 4, page: 4, size: 1)
    }

    @Test("a page far past the end is an empty page with correct meta, not an error")
    func pageFarPastTheEnd() throws {
        let user = try APIUser.fresh()
        expectPage(try user.get("/v1/categories?page=5000000&size=100"), ids: [], total: 4, pages: 1, page: 5_000_000, size: 100)
        expectPage(
            try user.get("/v1/categories?page=9223372036854775807&size=100"), ids: [], total: 4, pages: 1,
            page: 9_223_372_036_854_775_807, size: 100)
    }

    @Test("location_count counts live locations only, following moves, deletes, revivals and cascades")
    func locationCount() throws {
        let user = try APIUser.fresh()
        let home = newID()
        let work = newID()
        try user.createCategory(home, name: "Home")
        try user.createCategory(work, name: "Work")
        func counts() throws -> [String: Double] {
            var result: [String: Double] = [:]
            for record in try user.get("/v1/categories").data.compactMap(\.objectValue) {
                if let id = record["id"]?.stringValue, let count = record["location_count"]?.numberValue { result[id] = count }
            }
            return result
        }
        let places = (0..<4).map { _ in newID() }
        for place in places { try user.createLocation(place, in: home, ["updated_at": .string(clientTime(0))]) }
        #expect(try counts()[home] == 4 && counts()[work] == 0)
        expectNoContent(try user.delete("/v1/locations/\(places[0])"))
        #expect(try counts()[home] == 3)
        let moved = try user.put("/v1/locations", locationBody(id: places[1], categoryID: work, ["updated_at": .string(clientTime(1))]))
        #expect(moved.status == 200)
        #expect(try counts()[home] == 2 && counts()[work] == 1)
        #expect(try user.get("/v1/categories/\(work)").object["location_count"] == 1)
        let revived = try user.post("/v1/locations", locationBody(id: places[0], categoryID: work))
        #expect(revived.status == 200)
        #expect(try counts()[home] == 2 && counts()[work] == 2)
        expectNoContent(try user.delete("/v1/categories/\(home)", ["reassign_category_id": .string(work)]))
        #expect(try counts()[work] == 4 && counts()[home] == nil)
        expectNoContent(try user.delete("/v1/categories/\(work)"))
        #expect(try counts().values.allSatisfy { $0 == 0 })
        // A conflict answer carries the live count too.
        let restaurant = defaultCategories[0].id
        try user.createLocation(in: restaurant)
        let conflict = try user.post("/v1/categories", categoryBody(id: restaurant, name: "R", ["updated_at": "1969-12-31T23:59:59Z"]))
        #expect(conflict.status == 409 && conflict.object["data"]?.objectValue?["location_count"] == 1)
    }

    @Test("GET /v1/categories/{id}: 200 with the record; unknown or deleted E007; malformed E002")
    func getOne() throws {
        let user = try APIUser.fresh()
        let id = newID()
        let created = try user.createCategory(id, name: "One", updatedAtMinute: 0)
        expectRecord(try user.get("/v1/categories/\(id)"), 200, created)
        expectRecord(try user.get("/v1/categories/\(id.uppercased())"), 200, created)
        expectError(try user.get("/v1/categories/\(newID())"), 404, "E007")
        expectError(try user.get("/v1/categories/not-a-uuid"), 400, "E002", field: "id")
        expectError(try user.get("/v1/categories/\(id)x"), 400, "E002", field: "id")
        expectNoContent(try user.delete("/v1/categories/\(id)"))
        expectError(try user.get("/v1/categories/\(id)"), 404, "E007")
    }
}
