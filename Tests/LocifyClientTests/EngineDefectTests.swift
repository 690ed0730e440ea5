import Foundation
import GRDB
import HTTPServer
import LocifyClient
import Synchronization
import Testing
import TestSupport
import TestSupportServer

/// A store whose commits fail now and then, as a full disk would make them.
final class FlakyStore: InMemoryWrapper, Sendable {
    struct DiskFull: Error {}

    let inner = InMemoryStore()
    private let commits = Mutex(0)
    /// Every `period`-th commit fails.
    let period: Int

    init(failingEvery period: Int) { self.period = period }

    func commit(_ changes: LocalChanges) throws {
        let count = commits.withLock { count in
            count += 1
            return count
        }
        if count % period == 0 { throw DiskFull() }
        try inner.commit(changes)
    }
}

/// The engine defects of issue 22 item 4, one test each.
@Suite("LocifyClient engine: store failures, accounts, resync on E001, restore, batch splits, unknown messages, created_at")
struct EngineDefectTests {
    @Test("a failed store commit is reported as storeFailed (not transient) and nothing built on it is committed")
    func failedCommitStopsWhatFollows() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let store = FlakyStore(failingEvery: 3)
        let engine = SyncEngine(api: harness.api(), store: store)
        // Edits racing each other: categories and places in them; every third commit fails.
        var failures = 0
        await withTaskGroup(of: Bool.self) { group in
            for index in 0..<30 {
                group.addTask {
                    do {
                        let category = try await engine.saveCategory(name: "C\(index)")
                        try await engine.saveLocation(LocationDraft(categoryID: category.id, name: "L\(index)", latitude: 1, longitude: 1))
                        return true
                    } catch LocifyError.storeFailed {
                        return false
                    } catch {
                        Issue.record("unexpected \(error)")
                        return true
                    }
                }
            }
            for await succeeded in group where !succeeded { failures += 1 }
        }
        #expect(failures > 0)
        #expect(!LocifyError.storeFailed("disk full").isTransient)
        // What the store holds is consistent: every place's category is there, and the outbox
        // holds exactly the records the store holds.
        let contents = store.inner.contents
        for location in contents.locations.values {
            #expect(contents.categories[location.categoryID] != nil, "the category of \(location.name) was committed")
        }
        let pendingIDs = Set(contents.outbox.map(\.change.recordID))
        #expect(pendingIDs == Set(contents.categories.keys).union(contents.locations.keys))
        #expect(try await engine.pendingChanges().count == contents.outbox.count, "the engine sees what the store holds")
        // The rest syncs.
        let commitsLeft = FlakyStore(failingEvery: 1_000_000)
        try commitsLeft.inner.commit(Self.changes(toRebuild: contents))
        let healthy = SyncEngine(api: harness.api(), store: commitsLeft)
        try await healthy.sync()
        #expect(try await healthy.pendingChanges().isEmpty)
        #expect(try await harness.api().allLocations().count == contents.locations.count)
    }

    static func changes(toRebuild snapshot: LocalSnapshot) -> LocalChanges {
        var changes = LocalChanges()
        changes.upsertedCategories = Array(snapshot.categories.values)
        changes.upsertedLocations = Array(snapshot.locations.values)
        changes.upsertedOutbox = snapshot.outbox
        changes.nextOutboxID = snapshot.metadata.nextOutboxID
        return changes
    }

    @Test("reset() erases the store after a failure; the next sync starts again from the server")
    func resetAfterStoreFailure() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let store = InMemoryStore()
        let engine = SyncEngine(api: harness.api(), store: store)
        try await engine.saveCategory(name: "Synced")
        try await engine.sync()
        store.failCommits(with: FlakyStore.DiskFull())
        await #expect(throws: LocifyError.storeFailed(String(describing: FlakyStore.DiskFull()))) {
            try await engine.saveCategory(name: "Not kept")
        }
        store.failCommits(with: nil)
        try await engine.reset()
        #expect(try await engine.categories().isEmpty)
        try await engine.sync()
        let serverNames = try await harness.api().allCategories().map(\.name).sorted()
        #expect(try await engine.categories().map(\.name).sorted() == serverNames)
    }

    @Test("a SQLite store written by a newer version of the library is refused, not misread")
    func schemaVersion() throws {
        let file = TemporaryStoreFile()
        defer { file.remove() }
        let store = try file.open()
        try store.database.write { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v99-from-the-future')")
        }
        #expect {
            _ = try file.open()
        } throws: { error in
            guard case LocifyError.storeFailed(let message) = error else { return false }
            return message.contains("newer version")
        }
    }

    @Test("a store remembers its user: another user's token syncs nothing into the other account")
    func storeBoundToItsUser() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let (alice, bob) = ClientHarness.twoUsers(server)
        let file = TemporaryStoreFile()
        defer { file.remove() }
        let asAlice = SyncEngine(api: alice.api(), store: try file.open())
        try await asAlice.saveCategory(name: "Alice's")
        try await asAlice.sync()
        try await asAlice.saveCategory(name: "Alice's, not yet pushed")

        // The app signs Bob in but keeps Alice's store.
        let asBob = SyncEngine(api: bob.api(), store: try file.open())
        await #expect {
            try await asBob.sync()
        } throws: { error in
            guard case LocifyError.wrongAccount(let storeUser, let tokenUser) = error else { return false }
            return storeUser == alice.uid && tokenUser == bob.uid
        }
        #expect(!(try await bob.api().allCategories().map(\.name).contains { $0.hasPrefix("Alice") }))
        try await asBob.reset()
        try await asBob.sync()
        #expect(!(try await asBob.categories().map(\.name).contains { $0.hasPrefix("Alice") }))
    }

    @Test("a cursor the server refuses with E001 (not one of its cursors) leads to a resync, not a stuck sync")
    func badCursorResyncs() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let store = InMemoryStore()
        let engine = SyncEngine(api: harness.api(), store: store)
        try await engine.saveCategory(name: "Kept")
        try await engine.sync()
        var damage = LocalChanges()
        damage.cursor = .init(value: "not-a-cursor")
        try store.commit(damage)
        let relaunched = SyncEngine(api: harness.api(), store: store)
        try await relaunched.saveCategory(name: "Made before the resync")
        let report = try await relaunched.sync()
        #expect(report.resynced)
        let device = Device(name: "e001", engine: relaunched, events: await EventLog(relaunched))
        try await expectConverged([device], harness.api())
    }

    @Test("a category delete that loses gives back its places as the server has them, never over a newer local edit or delete")
    func restoreKeepsNewerLocalEdits() async throws {
        // One change per push: the delete is answered (and its places given back) while the
        // newer local edit and delete made after it are still queued; the push after it fails, so
        // the device shows what the restore left.
        let server = try TestServer.start(configure: { $0.maxPushChanges = 1 })
        defer { server.stop() }
        let harness = ClientHarness(server)
        // a's clock is set a minute back after its sync, so b's later rename is newer than a's delete.
        let aClock = SettableClock()
        let a = await Device.make(harness, "a", clock: aClock), b = await Device.make(harness, "b")
        defer { a.done(); b.done() }
        let doomed = try await a.engine.saveCategory(name: "Doomed")
        let target = try await a.engine.saveCategory(name: "Target")
        let edited = try await a.engine.saveLocation(LocationDraft(categoryID: doomed.id, name: "Edited later", latitude: 1, longitude: 1))
        let deleted = try await a.engine.saveLocation(LocationDraft(categoryID: doomed.id, name: "Deleted later", latitude: 1, longitude: 1))
        let untouched = try await a.engine.saveLocation(LocationDraft(categoryID: doomed.id, name: "Untouched", latitude: 1, longitude: 1))
        try await a.engine.sync()
        try await b.engine.sync()
        aClock.set(offset: -60)

        try await a.engine.deleteCategory(id: doomed.id, reassignTo: target.id)
        var draft = LocationDraft(try #require(try await a.engine.location(id: edited.id)))
        draft.name = "Edited after the delete"
        try await a.engine.saveLocation(draft)
        try await a.engine.deleteLocation(id: deleted.id)
        try await b.engine.saveCategory(id: doomed.id, name: "Renamed later elsewhere")  // a's delete loses
        try await b.engine.sync()
        // The delete's push and the read of its places pass; the next push never leaves.
        FaultPlans.script(device: a.name, [.none, .none, .failBeforeSending])
        do {
            try await a.engine.sync()
            Issue.record("the failed push must fail the sync")
        } catch LocifyError.network {}
        let keptWhileQueued = try #require(try await a.engine.location(id: edited.id))
        #expect(keptWhileQueued.name == "Edited after the delete", "the restore did not overwrite the queued edit")
        #expect(try await a.engine.location(id: deleted.id) == nil, "the restore did not revive the queued delete")
        try await a.engine.sync()

        #expect(try await a.engine.category(id: doomed.id)?.name == "Renamed later elsewhere")
        #expect(try await a.engine.location(id: untouched.id)?.categoryID == doomed.id, "back where the server has it")
        let kept = try #require(try await a.engine.location(id: edited.id))
        #expect(kept.name == "Edited after the delete" && kept.categoryID == target.id, "the newer local edit stays")
        #expect(try await a.engine.location(id: deleted.id) == nil, "the newer local delete stays")
        try await b.engine.sync()
        try await expectConverged([a, b], harness.api())
    }

    @Test("a push the server refuses whole as too large (413 E010) is split until it passes, instead of wedging the queue")
    func oversizedBatchSplits() async throws {
        let server = try TestServer.start(dependencies: { dependencies in
            dependencies.configureHTTP = { http in
                http.ioThreads = 2
                http.maxBodyBytes = 24_000
            }
        })
        defer { server.stop() }
        let harness = ClientHarness(server)
        let device = await Device.make(harness, "big")
        defer { device.done() }
        let category = try await device.engine.saveCategory(name: "Long descriptions")
        let text = String(repeating: "a long description ", count: 50)
        for index in 0..<40 {
            try await device.engine.saveLocation(
                LocationDraft(categoryID: category.id, name: "P\(index)", description: text, latitude: 1, longitude: 1))
        }
        let report = try await device.engine.sync()
        #expect(report.applied == 41 && report.rejected == 0)
        try await expectConverged([device], harness.api())
    }

    @Test("feed entries of an unknown type and push results of an unknown status decode, to be reported and skipped")
    func unknownMessages() throws {
        let feed = Data(
            #"{"changes":[{"type":"album","action":"upsert","id":"x","data":{}},{"type":"location","action":"merge","id":"y"}],"cursor":"c","has_more":false}"#
                .utf8)
        let page = try JSONDecoder().decode(FeedPage.self, from: feed)
        #expect(page.changes == [.unrecognized(type: "album", action: "upsert"), .unrecognized(type: "location", action: "merge")])
        let result = try JSONDecoder().decode(PushResult.self, from: Data(#"{"type":"category","id":null,"status":"deferred"}"#.utf8))
        #expect(result.status == .unknown("deferred"))
    }

    @Test("a place created and edited offline keeps the time of its first edit as created_at")
    func createdAtIsFirstEdit() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let clock = Mutex(Date().addingTimeInterval(-3600))
        let engine = SyncEngine(api: harness.api(), store: InMemoryStore(), clock: { clock.withLock { $0 } })
        let category = try await engine.saveCategory(name: "Offline")
        let created = try await engine.saveLocation(LocationDraft(categoryID: category.id, name: "First", latitude: 1, longitude: 1))
        clock.withLock { $0 = $0.addingTimeInterval(600) }
        var draft = LocationDraft(created)
        draft.name = "Edited ten minutes later"
        try await engine.saveLocation(draft)
        try await engine.sync()
        let onServer = try await harness.api().location(id: created.id)
        #expect(onServer.createdAt.locifyMilliseconds == created.createdAt.locifyMilliseconds)
        #expect(try await harness.api().category(id: category.id).createdAt.locifyMilliseconds == category.createdAt.locifyMilliseconds)
    }
}
