import Foundation
import JSON
import Locify
import LocifyAPI
import LocifyRules
import Primitives
import Testing
import TestSupport
import TestSupportServer

/// `GET /v1/sync/changes` (openapi.yaml), end to end over HTTP.
@Suite("Sync pull: snapshot, delta feed, cursors and paging")
struct SyncPullTests {
    typealias C = SyncChange

    /// A user with custom categories and locations, one deleted location and one deleted
    /// category (with its location), so the snapshot has tombstones to leave out.
    private func populate(_ client: SyncTestClient) throws -> (categories: [UUID], locations: [UUID]) {
        let categories = (0..<3).map { _ in UUID() }
        let locations = (0..<8).map { _ in UUID() }
        var changes = categories.enumerated().map { index, id in
            C.change("category", "create", C.category(id, name: "Category \(index)", at: 1))
        }
        for (index, id) in locations.enumerated() {
            changes.append(C.change("location", "create", C.location(id, category: categories[index % 3], name: "Place \(index)", at: 1)))
        }
        changes.append(C.change("location", "delete", C.deletion(locations[0], at: 2)))
        changes.append(C.change("category", "delete", C.deletion(categories[2], at: 2)))
        #expect(try client.pushResults(changes).allSatisfy { $0.string("status") == "applied" })
        return (categories, locations)
    }

    private func liveKeys(_ client: SyncTestClient) throws -> Set<String> {
        Set(try client.listCategories().map { "category:" + $0.string("id") })
            .union(try client.listLocations().map { "location:" + $0.string("id") })
    }

    @Test("without since, the feed is a snapshot of the live records: categories first, no tombstones")
    func snapshot() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let client = try SyncTestClient(server)
        _ = try populate(client)
        let page = try client.page()
        #expect(!page.hasMore)
        #expect(page.categoriesComeFirst)
        #expect(page.changes.allSatisfy { $0.string("action") == "upsert" && $0["deleted_at"] == nil })
        #expect(Set(page.keys) == (try liveKeys(client)))
        #expect(page.keys.count == 6 + 5)
        let categories = try client.listCategories()
        let fromFeed = page.changes.filter { $0.string("type") == "category" }.map(\.dataObject)
        #expect(Set(fromFeed.map { $0.string("id") }) == Set(categories.map { $0.string("id") }))
        for record in fromFeed {
            #expect(categories.contains(record), "snapshot records equal the listing's")
        }

        let brandNew = try SyncTestClient(server)
        let first = try brandNew.page()
        #expect(first.keys.sorted() == DefaultCategories.all.map { "category:" + $0.id.lowercasedString }.sorted())
        #expect(!first.hasMore)
    }

    @Test("paging with a small limit delivers every record exactly once with an exact has_more", arguments: [1, 2, 3])
    func paging(limit: Int) throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let client = try SyncTestClient(server)
        let (categories, locations) = try populate(client)
        let live = try liveKeys(client)

        let snapshot = try client.drain(limit: limit)
        let snapshotKeys = snapshot.pages.flatMap(\.keys)
        #expect(snapshotKeys.count == live.count && Set(snapshotKeys) == live, "each live record exactly once")
        #expect(snapshot.pages.count == (live.count + limit - 1) / limit, "no empty page after a full last page")
        #expect(snapshot.pages.dropLast().allSatisfy { $0.hasMore && $0.changes.count == limit })
        let types = snapshotKeys.map { $0.hasPrefix("category:") }
        #expect(types == types.sorted { $0 && !$1 }, "the whole snapshot lists categories before locations")

        // Updates, a delete, a create and a reassign that moves two locations.
        let created = UUID()
        let changes: [JSONValue] = [
            C.change("location", "update", C.location(locations[1], category: categories[1], name: "Moved by hand", at: 3)),
            C.change("location", "delete", C.deletion(locations[4], at: 3)),
            C.change("location", "create", C.location(created, category: categories[1], name: "Created", at: 3)),
            C.change("category", "update", C.category(categories[1], name: "Renamed", at: 3)),
            C.change("category", "delete", C.deletion(categories[0], at: 4, reassignTo: categories[1])),
        ]
        #expect(try client.pushResults(changes).allSatisfy { $0.string("status") == "applied" })
        // locations[3] and [6] were in categories[0]; [0] was deleted before, [1] moved by hand.
        let expected: Set<String> = [
            "category:\(categories[0].lowercasedString)", "category:\(categories[1].lowercasedString)",
            "location:\(locations[1].lowercasedString)", "location:\(locations[4].lowercasedString)",
            "location:\(created.lowercasedString)", "location:\(locations[3].lowercasedString)",
            "location:\(locations[6].lowercasedString)",
        ]
        let delta = try client.drain(since: snapshot.cursor, limit: limit)
        let deltaKeys = delta.pages.flatMap(\.keys)
        #expect(deltaKeys.count == expected.count && Set(deltaKeys) == expected)
        #expect(delta.pages.count == (expected.count + limit - 1) / limit)
        #expect(delta.pages.dropLast().allSatisfy { $0.hasMore && $0.changes.count == limit })

        var replica = FeedReplica()
        for page in snapshot.pages + delta.pages { replica.apply(page) }
        try expectReplicaMatchesServer(replica, client)
        let quiet = try client.page(since: delta.cursor, limit: limit)
        #expect(quiet.changes.isEmpty && !quiet.hasMore)
    }

    @Test("deletes appear in the delta as tombstones: action delete, data null, deleted_at")
    func tombstones() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let client = try SyncTestClient(server)
        let (category, location) = (UUID(), UUID())
        _ = try client.pushResults([
            C.change("category", "create", C.category(category, name: "Doomed", at: 1)),
            C.change("location", "create", C.location(location, category: DefaultCategories.all[0].id, name: "Doomed too", at: 1)),
        ])
        let cursor = try client.drain(limit: 10).cursor
        _ = try client.pushResults([
            C.change("location", "delete", C.deletion(location, at: 9)),
            C.change("category", "delete", C.deletion(category, at: 8)),
        ])
        let page = try client.page(since: cursor)
        #expect(
            page.changes == [
                [
                    "type": "category", "action": "delete", "id": .string(category.lowercasedString), "data": nil,
                    "deleted_at": .string(C.time(8)),
                ],
                [
                    "type": "location", "action": "delete", "id": .string(location.lowercasedString), "data": nil,
                    "deleted_at": .string(C.time(9)),
                ],
            ])
        #expect(!page.hasMore)
        // A snapshot taken now leaves both out.
        #expect(!(try client.page().keys.contains { $0.hasSuffix(location.lowercasedString) || $0.hasSuffix(category.lowercasedString) }))
    }

    @Test("locations moved by a reassign and tombstoned by a cascade appear in the feed")
    func categoryDeletesReachTheFeed() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let client = try SyncTestClient(server)
        let (source, target) = (UUID(), UUID())
        let (first, second, late) = (UUID(), UUID(), UUID())
        _ = try client.pushResults([
            C.change("category", "create", C.category(source, name: "Source", at: 1)),
            C.change("category", "create", C.category(target, name: "Target", at: 1)),
            C.change("location", "create", C.location(first, category: source, name: "First", at: 1)),
            C.change("location", "create", C.location(second, category: source, name: "Second", at: 1)),
            C.change("location", "create", C.location(late, category: target, name: "Edited late", at: 50)),
        ])
        var cursor = try client.drain(limit: 10).cursor
        _ = try client.pushResults([C.change("category", "delete", C.deletion(source, at: 10, reassignTo: target))])
        var page = try client.page(since: cursor)
        #expect(page.keys.count == 3 && page.keys.first == "category:\(source.lowercasedString)")
        #expect(Set(page.keys) == ["category:\(source.lowercasedString)", "location:\(first.lowercasedString)", "location:\(second.lowercasedString)"])
        for change in page.changes where change.string("type") == "location" {
            #expect(change.string("action") == "upsert")
            #expect(change.dataObject.string("category_id") == target.lowercasedString)
            #expect(change.dataObject.int("version") == 2)
            // Their own clocks stay (openapi.yaml, "Writes in any order").
            #expect(change.dataObject.string("updated_at") == C.time(1))
        }
        cursor = page.cursor

        _ = try client.pushResults([C.change("category", "delete", C.deletion(target, at: 20))])
        page = try client.page(since: cursor)
        #expect(Set(page.keys) == ["category:\(target.lowercasedString)", "location:\(first.lowercasedString)", "location:\(second.lowercasedString)", "location:\(late.lowercasedString)"])
        #expect(page.keys.first == "category:\(target.lowercasedString)")
        let deletedAt = Dictionary(uniqueKeysWithValues: page.changes.map { ($0.string("id"), $0.string("deleted_at")) })
        #expect(page.changes.allSatisfy { $0.string("action") == "delete" && $0["data"] == .null })
        // Each location hidden with its category is a tombstone at its own last write's time.
        #expect(deletedAt[first.lowercasedString] == C.time(1))
        #expect(deletedAt[late.lowercasedString] == C.time(50))
        #expect(try client.listLocations().isEmpty)
    }

    @Test("one category delete touching more records than a page is paged through within its stamp, none skipped")
    func bigCascadeAcrossPages() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let client = try SyncTestClient(server)
        let (big, target) = (UUID(), UUID())
        let places = (0..<25).map { _ in UUID() }
        _ = try client.pushResults(
            [
                C.change("category", "create", C.category(big, name: "Big", at: 1)),
                C.change("category", "create", C.category(target, name: "Target", at: 1)),
            ] + places.map { C.change("location", "create", C.location($0, category: big, name: "In big", at: 1)) })
        for reassign in [true, false] {
            let cursor = try client.drain(limit: 100).cursor
            let deleted = reassign ? big : target
            if reassign {
                _ = try client.pushResults([C.change("category", "delete", C.deletion(big, at: 5, reassignTo: target))])
            } else {
                _ = try client.pushResults([C.change("category", "delete", C.deletion(target, at: 6))])
            }
            let delta = try client.drain(since: cursor, limit: 4)
            let keys = delta.pages.flatMap(\.keys)
            #expect(keys.first == "category:\(deleted.lowercasedString)")
            #expect(keys.count == 26 && Set(keys.dropFirst()) == Set(places.map { "location:\($0.lowercasedString)" }))
            #expect(delta.pages.count == 7)
            let action = reassign ? "upsert" : "delete"
            #expect(delta.pages.flatMap(\.changes).dropFirst().allSatisfy { $0.string("action") == action })
        }
    }

    @Test("another user's records never reach the feed, even under the same ids")
    func usersAreIsolated() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let alice = try SyncTestClient(server)
        let bob = try SyncTestClient(server)
        let (category, location) = (UUID(), UUID())
        let aliceCursor = try alice.drain(limit: 100).cursor
        for (client, name) in [(alice, "Alice's"), (bob, "Bob's")] {
            _ = try client.pushResults([
                C.change("category", "create", C.category(category, name: name, at: 1)),
                C.change("location", "create", C.location(location, category: category, name: name, at: 1)),
            ])
        }
        _ = try bob.pushResults([C.change("location", "delete", C.deletion(location, at: 2))])
        let page = try alice.page(since: aliceCursor)
        #expect(page.changes.count == 2)
        #expect(page.changes.allSatisfy { $0.string("action") == "upsert" && $0.dataObject.string("name") == "Alice's" })
        #expect(page.changes.allSatisfy { $0.dataObject.string("user_id") == alice.uid })
        let bobSnapshot = try bob.page()
        #expect(bobSnapshot.changes.filter { $0.dataObject.string("name") == "Bob's" }.count == 1)
        #expect(!bobSnapshot.keys.contains("location:\(location.lowercasedString)"))
    }

    @Test("limit must be an integer from 1 to 1000 (E001)", arguments: ["0", "1001", "-1", "abc", "1.5", "", "1e3", "99999999999999999999"])
    func badLimit(limit: String) throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let client = try SyncTestClient(server)
        let response = try client.pull(limit: limit)
        #expect(response.status == 400 && response.errorCode == "E001" && response.errorField == "limit")
    }

    @Test("limit defaults to 500 and accepts 1 and 1000")
    func limitBounds() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let client = try SyncTestClient(server)
        for batch in 0..<10 {
            let changes = (0..<50).map { index in
                C.change("location", "create", C.location(UUID(), category: DefaultCategories.all[0].id, name: "P\(batch)-\(index)", at: 1))
            }
            _ = try client.pushResults(changes)
        }
        var page = try client.page()
        #expect(page.changes.count == 500 && page.hasMore)
        page = try client.page(since: page.cursor)
        #expect(page.changes.count == 4 && !page.hasMore)
        page = try client.page(limit: 1000)
        #expect(page.changes.count == 504 && !page.hasMore)
        page = try client.page(limit: 1)
        #expect(page.changes.count == 1 && page.hasMore)
    }

    @Test("a garbage, tampered or truncated cursor is E001, and so is another user's cursor")
    func badCursors() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let client = try SyncTestClient(server)
        let cursor = try client.page().cursor
        var tampered = Array(cursor)
        tampered[tampered.count / 2] = tampered[tampered.count / 2] == "A" ? "B" : "A"
        let garbage = [
            "garbage", "", "A", String(repeating: "A", count: cursor.count), String(cursor.dropLast()), cursor + "A",
            String(tampered), String(repeating: "x", count: 5000), "%00%ff", "..",
        ]
        for text in garbage {
            let response = try client.pull(since: text)
            #expect(response.status == 400 && response.errorCode == "E001" && response.errorField == "since", "cursor \(text)")
        }
        let other = try SyncTestClient(server)
        let response = try other.pull(since: cursor)
        #expect(response.status == 400 && response.errorCode == "E001")
        #expect(try client.pull(since: cursor).status == 200)
    }

    @Test("a cursor issued longer ago than the retention is 410 E009")
    func expiredCursor() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let client = try SyncTestClient(server)
        _ = try client.page()
        // An account older than the retention, so cursors on both sides of the horizon are its own.
        _ = try server.pool.withConnection { connection in
            try connection.query("UPDATE users SET created_at = now() - interval '60 days' WHERE id = \(client.uid)")
        }
        let retention = Int64(server.configuration.tombstoneRetentionSeconds) * 1000
        let now = WallClock.system.now()
        for phase in [SyncCursor.Phase.delta, .snapshotCategories, .snapshotLocations] {
            let old = SyncCursor(phase: phase, seq: 1, rank: 2, afterID: SyncCursor.minID, issuedAt: now.adding(milliseconds: -retention - 60_000))
            let response = try client.pull(since: old.encoded(for: client.uid))
            #expect(response.status == 410 && response.errorCode == "E009", "phase \(phase)")
            let recent = SyncCursor(phase: phase, seq: 1, rank: 2, afterID: SyncCursor.minID, issuedAt: now.adding(milliseconds: -retention + 60_000))
            #expect(try client.pull(since: recent.encoded(for: client.uid)).status == 200, "phase \(phase)")
        }

        // For real, with a one-second retention: the time only moves forward.
        let short = try TestServer.start(.inProcess) { $0.tombstoneRetentionSeconds = 1 }
        defer { short.stop() }
        let shortClient = try SyncTestClient(short)
        let cursor = try shortClient.page().cursor
        Thread.sleep(forTimeInterval: 1.3)
        let response = try shortClient.pull(since: cursor)
        #expect(response.status == 410 && response.errorCode == "E009")
        #expect(try short.request("GET", "/v1/info", token: shortClient.token).object["tombstone_retention_seconds"] == 1)
    }

    @Test("the last snapshot page's cursor continues exactly after the snapshot, with the changes made between pages")
    func snapshotThenDelta() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let client = try SyncTestClient(server)
        let home = UUID()
        let places = (0..<6).map { _ in UUID() }
        _ = try client.pushResults(
            [C.change("category", "create", C.category(home, name: "Home", at: 1))]
                + places.enumerated().map { C.change("location", "create", C.location($1, category: home, name: "Place \($0)", at: 1)) })
        // Locations come by id order in the snapshot: learn which come first.
        let byID = places.sorted { $0.lowercasedString < $1.lowercasedString }
        var replica = FeedReplica()
        var page = try client.page(limit: 7)  // 5 categories and the first 2 locations
        #expect(page.hasMore && page.keys.suffix(2) == byID.prefix(2).map { "location:\($0.lowercasedString)" })
        replica.apply(page)

        // Between snapshot pages: edit one delivered and one pending record, delete one of
        // each, create one.
        let created = UUID()
        _ = try client.pushResults([
            C.change("location", "update", C.location(byID[0], category: home, name: "Delivered, then edited", at: 2)),
            C.change("location", "update", C.location(byID[3], category: home, name: "Pending, then edited", at: 2)),
            C.change("location", "delete", C.deletion(byID[1], at: 2)),
            C.change("location", "delete", C.deletion(byID[4], at: 2)),
            C.change("location", "create", C.location(created, category: home, name: "Created meanwhile", at: 2)),
        ])
        page = try client.page(since: page.cursor, limit: 2)
        // The rest of the snapshot as it stood: only the untouched byID[2] and byID[5]; the
        // last snapshot page knows more changes follow.
        #expect(page.keys == [byID[2], byID[5]].map { "location:\($0.lowercasedString)" })
        #expect(page.hasMore)
        replica.apply(page)
        let delta = try client.drain(since: page.cursor, limit: 7)
        let deltaKeys = delta.pages.flatMap(\.keys)
        #expect(deltaKeys.count == 5)
        #expect(Set(deltaKeys) == Set([byID[0], byID[3], byID[1], byID[4], created].map { "location:\($0.lowercasedString)" }))
        for page in delta.pages { replica.apply(page) }
        try expectReplicaMatchesServer(replica, client)
        #expect(replica.deliveries["location:\(byID[3].lowercasedString)"] == 1, "a record edited before its snapshot page comes once")
    }

    @Test("tombstones older than the retention are purged; live records stay")
    func purge() throws {
        let server = try TestServer.start(.inProcess) { configuration in
            configuration.tombstoneRetentionSeconds = 1
            configuration.tombstonePurgeIntervalSeconds = 1
        }
        defer { server.stop() }
        let client = try SyncTestClient(server)
        let (category, doomedCategory) = (UUID(), UUID())
        let (kept, doomed) = (UUID(), UUID())
        _ = try client.pushResults([
            C.change("category", "create", C.category(category, name: "Kept", at: 1)),
            C.change("category", "create", C.category(doomedCategory, name: "Doomed", at: 1)),
            C.change("location", "create", C.location(kept, category: category, name: "Kept", at: 1)),
            C.change("location", "create", C.location(doomed, category: category, name: "Doomed", at: 1)),
            C.change("location", "delete", C.deletion(doomed, at: 2)),
            C.change("category", "delete", C.deletion(doomedCategory, at: 2)),
        ])
        let tombstones = { () throws -> Int64 in
            try server.pool.withConnection { connection in
                let rows = try connection.query(
                    """
                    SELECT (SELECT count(*) FROM categories WHERE user_id = \(client.uid) AND deleted_at IS NOT NULL)
                         + (SELECT count(*) FROM locations WHERE user_id = \(client.uid) AND deleted_at IS NOT NULL)
                    """)
                return try rows.first?.decode(0, as: Int64.self) ?? -1
            }
        }
        // The server's own purge (every second, one-second retention) removes them (the domain
        // tests check that younger tombstones stay).
        let deadline = Date().addingTimeInterval(60)
        while try tombstones() > 0, Date() < deadline {
            Thread.sleep(forTimeInterval: 0.2)
        }
        #expect(try tombstones() == 0)
        let snapshot = try client.page()
        #expect(snapshot.keys.contains("location:\(kept.lowercasedString)"))
        #expect(snapshot.keys.contains("category:\(category.lowercasedString)"))
        #expect(snapshot.keys.count == 5 + 1)
        #expect(try client.get("location", kept).status == 200)
    }

    @Test("a cursor from before the account was deleted and created again is 410 E009")
    func cursorAcrossAccountDeletion() throws {
        // A 1 s clock skew: tokens with iat <= deletion second + 1 are refused (issue 13 item 10).
        let server = try TestServer.start(.inProcess, configure: { $0.tokenClockSkewSeconds = 1 })
        defer { server.stop() }
        let client = try SyncTestClient(server)
        let category = UUID()
        _ = try client.pushResults(
            [C.change("category", "create", C.category(category, name: "Before", at: 1))]
                + (0..<20).map { C.change("location", "create", C.location(UUID(), category: category, name: "Old \($0)", at: 1)) })
        let cursor = try client.drain(limit: 100).cursor
        #expect(try server.request("DELETE", "/v1/users/me", token: client.token).status == 204)
        // A token issued after the deletion second + skew re-creates the account (and is not
        // "issued in the future" beyond the skew once 1.1 s have passed).
        Thread.sleep(forTimeInterval: 1.1)
        let reborn = try server.token(for: client.uid, issuedAt: Date().timeIntervalSince1970 + 1)
        let response = try server.request(
            "POST", "/v1/locations", token: reborn,
            json: .object(C.location(UUID(), category: DefaultCategories.all[0].id, name: "After", at: 5)))
        #expect(response.status == 201)
        let pulled = try server.request("GET", "/v1/sync/changes?since=\(cursor)", token: reborn)
        #expect(pulled.status == 410 && pulled.errorCode == "E009", "\(pulled.text)")
    }
}
