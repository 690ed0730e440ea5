import Foundation
import Locify
import Testing

/// A client's local copy rebuilt from the domain feed: upserts replace, tombstones remove.
struct DomainReplica: Sendable {
    var categories: [UUID: Category] = [:]
    var locations: [UUID: Location] = [:]
    /// Pages read and changes applied, for the test's report.
    var pages = 0
    var changes = 0

    /// Applies one page after checking the rules every page obeys.
    mutating func apply(_ page: FeedPage, limit: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        pages += 1
        changes += page.changes.count
        #expect(page.changes.count <= limit, sourceLocation: sourceLocation)
        let kinds = page.changes.map(\.kind)
        #expect(kinds == kinds.sorted(), "categories before locations within a page", sourceLocation: sourceLocation)
        for change in page.changes {
            switch change {
            case .category(var category):
                category.locationCount = 0
                categories[category.id] = category
            case .location(let location):
                locations[location.id] = location
            case .tombstone(.category, let id, _):
                categories[id] = nil
            case .tombstone(.location, let id, _):
                locations[id] = nil
            }
        }
    }

    /// Expects the replica to hold exactly the server's live records (ids, versions, contents)
    /// as the listing endpoints return them, and the location counts a client derives to match.
    func expectEqualsServer(_ services: LocifyServices, _ caller: Caller, sourceLocation: SourceLocation = #_sourceLocation) throws {
        var listedCategories: [Category] = []
        var page = 1
        while true {
            let records = try services.categories.list(caller, PageRequest(page: page, size: 100)).records
            listedCategories += records
            if records.count < 100 { break }
            page += 1
        }
        var listedLocations: [Location] = []
        page = 1
        while true {
            let records = try services.locations.list(caller, LocationQuery(page: PageRequest(page: page, size: 100))).records
            listedLocations += records
            if records.count < 100 { break }
            page += 1
        }
        let (listedCategoryIDs, listedLocationIDs) = (Set(listedCategories.map(\.id)), Set(listedLocations.map(\.id)))
        let categoryIDs = Set(categories.keys)
        let locationIDs = Set(locations.keys)
        #expect(
            categoryIDs == listedCategoryIDs,
            "categories missing from the replica: \(listedCategoryIDs.subtracting(categoryIDs)), extra: \(categoryIDs.subtracting(listedCategoryIDs))",
            sourceLocation: sourceLocation)
        #expect(
            locationIDs == listedLocationIDs,
            "locations missing from the replica: \(listedLocationIDs.subtracting(locationIDs)), extra: \(locationIDs.subtracting(listedLocationIDs))",
            sourceLocation: sourceLocation)
        var counts: [UUID: Int64] = [:]
        for location in locations.values { counts[location.categoryID, default: 0] += 1 }
        for listed in listedCategories {
            var expected = listed
            expected.locationCount = 0
            if let replicated = categories[listed.id] {
                #expect(replicated == expected, sourceLocation: sourceLocation)
            }
            #expect(counts[listed.id, default: 0] == listed.locationCount, "location count of \(listed.name)", sourceLocation: sourceLocation)
        }
        for listed in listedLocations {
            if let replicated = locations[listed.id] {
                #expect(replicated == listed, sourceLocation: sourceLocation)
            }
        }
    }
}
