import JSON
import Testing

/// A client's local copy rebuilt from the feed: upserts replace, deletes remove.
struct FeedReplica {
    var categories: [String: JSONObject] = [:]
    var locations: [String: JSONObject] = [:]
    /// How many times each `type:id` was delivered.
    var deliveries: [String: Int] = [:]

    mutating func apply(_ page: FeedPageJSON) {
        for change in page.changes { apply(change) }
    }

    mutating func apply(_ change: JSONObject) {
        deliveries[change.changeKey, default: 0] += 1
        let id = change.string("id")
        let record: JSONObject? = change.string("action") == "upsert" ? change.dataObject : nil
        if change.string("type") == "category" {
            categories[id] = record?.withoutLocationCount
        } else {
            locations[id] = record
        }
    }

    /// Live locations per category id, as a client counts them.
    var locationCounts: [String: Int64] {
        var counts: [String: Int64] = [:]
        for location in locations.values { counts[location.string("category_id"), default: 0] += 1 }
        return counts
    }
}

/// The replica rebuilt from the feed holds exactly the server's live records (ids, versions,
/// contents), and the location counts a client derives equal the server's.
func expectReplicaMatchesServer(
    _ replica: FeedReplica, _ client: SyncTestClient, sourceLocation: SourceLocation = #_sourceLocation
) throws {
    let categories = try client.listCategories()
    let locations = try client.listLocations()
    #expect(Set(replica.categories.keys) == Set(categories.map { $0.string("id") }), sourceLocation: sourceLocation)
    #expect(Set(replica.locations.keys) == Set(locations.map { $0.string("id") }), sourceLocation: sourceLocation)
    for category in categories {
        #expect(replica.categories[category.string("id")] == category.withoutLocationCount, sourceLocation: sourceLocation)
        #expect(
            replica.locationCounts[category.string("id"), default: 0] == category.int("location_count"), sourceLocation: sourceLocation)
    }
    for location in locations {
        #expect(replica.locations[location.string("id")] == location, sourceLocation: sourceLocation)
    }
}
