import Foundation
import LocifyClient
import Testing
import TestSupport
import TestSupportServer

/// A simulated device: a SyncEngine with its own store, clock and (faulty) network.
struct Device: Sendable {
    let name: String
    let engine: SyncEngine
    let events: EventLog

    static func make(
        _ harness: ClientHarness, _ label: String, clockOffset: TimeInterval = 0, store: (any LocalStore)? = nil,
        pullLimit: Int = 500, clock: SettableClock? = nil
    ) async -> Device {
        let name = "\(label)\(UInt32.random(in: 0...UInt32.max))"
        let engine = SyncEngine(
            api: harness.faultyAPI(device: name), store: store ?? InMemoryStore(), clock: clock?.read ?? offsetClock(clockOffset))
        await engine.setPullLimit(pullLimit)
        return Device(name: name, engine: engine, events: await EventLog(engine))
    }

    func done() {
        events.stop()
        FaultPlans.remove(device: name)
    }
}

/// Every device's store equals the server's listings and its snapshot feed, and no change is pending.
/// `explain` describes a record that differs (the soak's oracle tells its history).
func expectConverged(
    _ devices: [Device], _ api: LocifyAPIClient, explain: (RecordKind, UUID) -> String = { _, _ in "" },
    sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    let listings = try await ServerView.listings(api).comparable
    let feed = try await ServerView.snapshotFeed(api).comparable
    #expect(feed == listings, "the snapshot feed equals the listings", sourceLocation: sourceLocation)
    for device in devices {
        let local = try await ServerView.device(device.engine)
        if local != listings {
            Issue.record(
                "\(device.name)'s store differs from the server:\n\(local.difference(from: listings, explain: explain))\nevents: \(device.events.all)",
                sourceLocation: sourceLocation)
        }
        #expect(try await device.engine.pendingChanges().isEmpty, "\(device.name) has nothing pending", sourceLocation: sourceLocation)
    }
}

/// SyncEngine end to end against the real server and PostgreSQL, one behaviour per test.
@Suite("LocifyClient sync engine: outbox, batches, conflicts, resync, replay, restore")
struct SyncEngineTests {
    @Test("offline edits are pushed in batches of at most max_push_changes and reach another device through the feed")
    func batchesAndFeed() async throws {
        let server = try TestServer.start(configure: { $0.maxPushChanges = 5 })
        defer { server.stop() }
        let harness = ClientHarness(server)
        let a = await Device.make(harness, "a"), b = await Device.make(harness, "b", pullLimit: 3)
        defer { a.done(); b.done() }

        let category = try await a.engine.saveCategory(name: "Bakeries")
        for index in 0..<22 {
            try await a.engine.saveLocation(
                LocationDraft(categoryID: category.id, name: "Place \(index)", latitude: 48, longitude: 2))
        }
        #expect(try await a.engine.pendingChanges().count == 23)
        let report = try await a.engine.sync()
        #expect(report.pushed == 23 && report.applied == 23 && report.conflicts == 0)
        let batches = a.events.all.compactMap { event -> Int? in
            if case .pushed(let changes, _, _, _) = event { return changes }
            return nil
        }
        #expect(batches == [5, 5, 5, 5, 3])
        try await b.engine.sync()
        #expect(try await b.engine.locations(in: category.id).count == 22)
        #expect(try await b.engine.categories().first { $0.id == category.id }?.locationCount == 22)
        try await expectConverged([a, b], harness.api())
    }

    @Test("a local edit older than the server's version loses: E008, the device adopts the server's record")
    func conflictAdoptsServer() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        // a's clock is set a minute back after its sync, so its offline edit is older than b's later one.
        let aClock = SettableClock()
        let a = await Device.make(harness, "a", clock: aClock), b = await Device.make(harness, "b")
        defer { a.done(); b.done() }
        let category = try await b.engine.saveCategory(name: "Cafes")
        try await b.engine.sync()
        try await a.engine.sync()
        aClock.set(offset: -60)

        try await a.engine.saveCategory(id: category.id, name: "Coffee (a, older)")
        let newer = try await b.engine.saveCategory(id: category.id, name: "Coffee (b, newer)")
        try await b.engine.sync()
        let report = try await a.engine.sync()
        #expect(report.conflicts == 1)
        #expect(try await a.engine.category(id: category.id)?.name == newer.name)
        #expect(
            await a.events.contains { event in
                if case .conflictResolved(.category(let record)) = event { return record.name == newer.name }
                return false
            })
        try await expectConverged([a, b], harness.api())
    }

    @Test("a category delete superseded by a newer edit elsewhere gives back the category and the locations the local cascade removed", arguments: [false, true])
    func deleteSuperseded(reassign: Bool) async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        // a's clock is set a minute back after its first sync (its learnt offset is then a minute off).
        let aClock = SettableClock()
        let a = await Device.make(harness, "a", clock: aClock), b = await Device.make(harness, "b")
        defer { a.done(); b.done() }
        let doomed = try await b.engine.saveCategory(name: "Doomed")
        let target = try await b.engine.saveCategory(name: "Target")
        var places: [UUID] = []
        for index in 0..<3 {
            places.append(
                try await b.engine.saveLocation(LocationDraft(categoryID: doomed.id, name: "P\(index)", latitude: 1, longitude: 1)).id)
        }
        try await b.engine.sync()
        try await a.engine.sync()
        aClock.set(offset: -60)

        try await a.engine.deleteCategory(id: doomed.id, reassignTo: reassign ? target.id : nil)
        #expect(try await a.engine.locations(in: doomed.id).isEmpty)
        try await b.engine.saveCategory(id: doomed.id, name: "Kept by a newer edit")
        try await b.engine.sync()
        try await a.engine.sync()

        #expect(try await a.engine.category(id: doomed.id)?.name == "Kept by a newer edit")
        #expect(Set(try await a.engine.locations(in: doomed.id).map(\.id)) == Set(places))
        #expect(
            await a.events.contains { event in
                if case .restored(doomed.id, let ids) = event { return Set(ids) == Set(places) }
                return false
            })
        try await expectConverged([a, b], harness.api())
    }

    @Test("a category made, filled and deleted offline leaves nothing behind, even pushed one change per batch")
    func createdAndDeletedOffline() async throws {
        let server = try TestServer.start(configure: { $0.maxPushChanges = 1 })
        defer { server.stop() }
        let harness = ClientHarness(server)
        let a = await Device.make(harness, "a")
        defer { a.done() }
        try await a.engine.sync()  // a cursor: the next pull is a delta, not a snapshot that rebuilds the copy
        let category = try await a.engine.saveCategory(name: "Short-lived")
        let location = try await a.engine.saveLocation(LocationDraft(categoryID: category.id, name: "Gone", latitude: 0, longitude: 0))
        try await a.engine.saveLocation(LocationDraft(location))
        try await a.engine.deleteCategory(id: category.id)
        try await a.engine.sync()
        #expect(try await a.engine.location(id: location.id) == nil)
        #expect(try await a.engine.category(id: category.id) == nil)
        try await expectConverged([a], harness.api())
    }

    @Test("a location pushed in the same batch as its category's losing delete comes back in its server version")
    func restoredLocationIsTheServers() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        // a's clock is set a minute back after its first sync (its learnt offset is then a minute off).
        let aClock = SettableClock()
        let a = await Device.make(harness, "a", clock: aClock), b = await Device.make(harness, "b")
        defer { a.done(); b.done() }
        let category = try await b.engine.saveCategory(name: "Kept")
        try await b.engine.sync()
        try await a.engine.sync()
        aClock.set(offset: -60)
        let location = try await a.engine.saveLocation(LocationDraft(categoryID: category.id, name: "New", latitude: 0, longitude: 0))
        try await a.engine.deleteCategory(id: category.id)
        try await b.engine.saveCategory(id: category.id, name: "Kept, edited later")
        try await b.engine.sync()
        try await a.engine.sync()
        let restored = try #require(try await a.engine.location(id: location.id))
        #expect(restored.version == 1 && restored.userID == harness.uid)
        try await b.engine.sync()
        try await expectConverged([a, b], harness.api())
    }

    @Test("category deletes cascade or reassign on every device")
    func deletesApplied() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let a = await Device.make(harness, "a"), b = await Device.make(harness, "b")
        defer { a.done(); b.done() }
        let first = try await a.engine.saveCategory(name: "First")
        let second = try await a.engine.saveCategory(name: "Second")
        let third = try await a.engine.saveCategory(name: "Third")
        for category in [first, second, second] {
            try await a.engine.saveLocation(LocationDraft(categoryID: category.id, name: "x", latitude: 0, longitude: 0))
        }
        try await a.engine.sync()
        try await b.engine.sync()
        try await b.engine.deleteCategory(id: first.id)
        try await b.engine.deleteCategory(id: second.id, reassignTo: third.id)
        try await b.engine.sync()
        try await a.engine.sync()
        #expect(try await a.engine.category(id: first.id) == nil)
        #expect(try await a.engine.locations(in: third.id).count == 2)
        #expect(try await a.engine.locations().count == 2)
        try await expectConverged([a, b], harness.api())
    }

    @Test("a location created offline in a category deleted elsewhere is refused (E007) and removed, with an event")
    func rejectedChange() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let a = await Device.make(harness, "a"), b = await Device.make(harness, "b")
        defer { a.done(); b.done() }
        let category = try await a.engine.saveCategory(name: "Shared")
        try await a.engine.sync()
        try await b.engine.sync()
        let orphan = try await a.engine.saveLocation(LocationDraft(categoryID: category.id, name: "Orphan", latitude: 0, longitude: 0))
        try await b.engine.deleteCategory(id: category.id)
        try await b.engine.sync()
        let report = try await a.engine.sync()
        #expect(report.rejected == 1)
        #expect(try await a.engine.location(id: orphan.id) == nil)
        #expect(
            await a.events.contains { event in
                if case .changeRejected(.createLocation(let write), .notFound(let error)) = event {
                    return write.id == orphan.id && error.code == "E007"
                }
                return false
            })
        try await expectConverged([a, b], harness.api())
    }

    @Test("a push whose answer was lost is replayed: every change replays without a conflict or a second version")
    func replayAfterLostAnswer() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let a = await Device.make(harness, "a")
        defer { a.done() }
        let category = try await a.engine.saveCategory(name: "C")
        try await a.engine.saveLocation(LocationDraft(categoryID: category.id, name: "L", latitude: 0, longitude: 0))
        FaultPlans.script(device: a.name, [.none, .dropAnswer])  // /v1/info passes, the push's answer is lost
        do {
            try await a.engine.sync()
            Issue.record("the lost answer must fail the sync")
        } catch LocifyError.network {}
        #expect(try await a.engine.pendingChanges().count == 2)
        #expect(try await harness.api().allLocations().count == 1, "the server applied the lost batch")
        let report = try await a.engine.sync()
        #expect(report.applied == 2 && report.conflicts == 0 && report.rejected == 0)
        #expect(try await a.engine.locations().map(\.version) == [1])
        try await expectConverged([a], harness.api())
    }

    /// The crash test's finding: the server applied a batch holding a place's edit and its
    /// category's later delete, the answer was lost (or the app was killed), and the replayed edit
    /// meets the category this device itself deleted (E007). The edit was applied, then superseded
    /// by the device's own delete: nothing to report, and the place is as that delete left it.
    @Test(
        "a lost batch holding a place's edit and its category's later delete replays without a refusal",
        arguments: [false, true])
    func replayOfEditBeforeOwnCategoryDelete(reassign: Bool) async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let a = await Device.make(harness, "a")
        defer { a.done() }
        let category = try await a.engine.saveCategory(name: "C")
        let target = try await a.engine.saveCategory(name: "D")
        let place = try await a.engine.saveLocation(LocationDraft(categoryID: category.id, name: "L", latitude: 0, longitude: 0))
        try await a.engine.sync()
        var draft = LocationDraft(place)
        draft.name = "L edited"
        try await a.engine.saveLocation(draft)
        try await a.engine.deleteCategory(id: category.id, reassignTo: reassign ? target.id : nil)
        FaultPlans.script(device: a.name, [.dropAnswer])  // the push's answer is lost
        do {
            try await a.engine.sync()
            Issue.record("the lost answer must fail the sync")
        } catch LocifyError.network {}
        let report = try await a.engine.sync()
        #expect(report.rejected == 0 && report.conflicts == 0, "\(report)")
        #expect(!a.events.all.contains { if case .changeRejected = $0 { true } else { false } }, "\(a.events.all)")
        let locations = try await a.engine.locations()
        if reassign {
            #expect(locations.map(\.name) == ["L edited"] && locations.map(\.categoryID) == [target.id])
        } else {
            #expect(locations.isEmpty)
        }
        try await expectConverged([a], harness.api())
    }

    /// The soak's seed 3007: a device's first snapshot, cut short and continued in a later sync,
    /// never dropped a category the device had pushed and another device deleted before the
    /// snapshot began (no page holds it, and the delta after the snapshot starts after its delete).
    @Test("a first snapshot cut short by the network still drops, when it ends, a record deleted elsewhere before it began")
    func interruptedFirstPullDropsWhatItDidNotHold() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let a = await Device.make(harness, "a", pullLimit: 2), b = await Device.make(harness, "b")
        defer { a.done(); b.done() }
        let category = try await a.engine.saveCategory(name: "Made on a")
        // Sync 1: info and the push pass, the first page fails. Sync 2: a page, then a failure.
        FaultPlans.script(device: a.name, [.none, .none, .failBeforeSending, .none, .failBeforeSending])
        for attempt in 0..<2 {
            do {
                try await a.engine.sync()
                Issue.record("the failed pull must fail the sync")
            } catch LocifyError.network {}
            if attempt == 0 {
                // Pushed by a, deleted on b before a's snapshot begins.
                try await b.engine.sync()
                try await b.engine.deleteCategory(id: category.id)
                try await b.engine.sync()
            }
        }
        try await a.engine.sync()
        #expect(try await a.engine.category(id: category.id) == nil, "deleted on b before a's snapshot began")
        try await expectConverged([a, b], harness.api())
    }

    @Test("an expired cursor (E009) rebuilds the copy from a snapshot and keeps the unsynced local changes")
    func resyncKeepsLocalChanges() async throws {
        let server = try TestServer.start(configure: { $0.tombstoneRetentionSeconds = 1 })
        defer { server.stop() }
        let harness = ClientHarness(server)
        let a = await Device.make(harness, "a"), b = await Device.make(harness, "b")
        defer { a.done(); b.done() }
        let category = try await a.engine.saveCategory(name: "Before")
        try await a.engine.sync()
        try await b.engine.sync()
        try await b.engine.deleteCategory(id: category.id)
        let fromB = try await b.engine.saveCategory(name: "From b")
        try await b.engine.sync()
        let local = try await a.engine.saveCategory(name: "Made offline on a")
        try await Task.sleep(for: .milliseconds(2100))

        let report = try await a.engine.sync()
        #expect(report.resynced)
        #expect(await a.events.contains { $0 == .resyncStarted })
        #expect(try await a.engine.category(id: category.id) == nil)
        #expect(try await a.engine.category(id: fromB.id) != nil)
        #expect(try await a.engine.category(id: local.id)?.version == 1)
        try await b.engine.sync()
        try await expectConverged([a, b], harness.api())
    }

    @Test("a category delete made while a resync runs gives back only the locations the server still has when it loses")
    func deleteDuringResync() async throws {
        let server = try TestServer.start(configure: { $0.tombstoneRetentionSeconds = 1 })
        defer { server.stop() }
        let harness = ClientHarness(server)
        // a's clock is set a minute back after its first sync (its learnt offset is then a minute off).
        let aClock = SettableClock()
        let a = await Device.make(harness, "a", clock: aClock), b = await Device.make(harness, "b")
        defer { a.done(); b.done() }
        let category = try await b.engine.saveCategory(name: "C")
        let gone = try await b.engine.saveLocation(LocationDraft(categoryID: category.id, name: "Gone", latitude: 0, longitude: 0))
        let kept = try await b.engine.saveLocation(LocationDraft(categoryID: category.id, name: "Kept", latitude: 0, longitude: 0))
        try await b.engine.sync()
        try await a.engine.sync()
        aClock.set(offset: -60)
        try await b.engine.deleteLocation(id: gone.id)
        try await b.engine.sync()
        try await Task.sleep(for: .milliseconds(1100))  // a's cursor expires

        // a's pull (E009) is slow; meanwhile a deletes the category, stashing both locations.
        FaultPlans.script(device: a.name, [.delayed(600)])
        let resync = Task { try await a.engine.sync() }
        try await Task.sleep(for: .milliseconds(200))
        try await a.engine.deleteCategory(id: category.id)
        #expect(try await resync.value.resynced)

        try await b.engine.saveCategory(id: category.id, name: "C, edited later")  // a's delete will lose
        try await b.engine.sync()
        try await a.engine.sync()
        #expect(try await a.engine.location(id: gone.id) == nil, "deleted on the server before the resync")
        #expect(try await a.engine.location(id: kept.id) != nil)
        try await expectConverged([a, b], harness.api())
    }

    @Test("a device whose clock is ahead has its future times clamped by the server and adopts them")
    func clockAhead() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let ahead = await Device.make(harness, "ahead", clockOffset: 3600), b = await Device.make(harness, "b")
        defer { ahead.done(); b.done() }
        let category = try await ahead.engine.saveCategory(name: "Future")
        try await ahead.engine.sync()
        let stored = try #require(try await ahead.engine.category(id: category.id))
        #expect(stored.updatedAt < category.updatedAt, "clamped to the server's clock")
        try await b.engine.sync()
        try await b.engine.saveCategory(id: category.id, name: "Edited later on b")
        try await b.engine.sync()
        try await ahead.engine.sync()
        #expect(try await ahead.engine.category(id: category.id)?.name == "Edited later on b")
        try await expectConverged([ahead, b], harness.api())
    }

    @Test("a rate-limited sync waits out the short Retry-After (S001) and completes")
    func rateLimited() async throws {
        let server = try TestServer.start(configure: {
            // A token every 2 s (Retry-After 2, within the engine's 5 s): slow enough that the quick
            // calls below empty the bucket even on a loaded machine or under a sanitizer.
            $0.rateLimitPerSecond = 0.5
            $0.rateLimitBurst = 2
        })
        defer { server.stop() }
        let harness = ClientHarness(server)
        let a = await Device.make(harness, "a", pullLimit: 2)
        defer { a.done() }
        for index in 0..<3 { try await a.engine.saveCategory(name: "C\(index)") }
        // info, push, then four pages of the snapshot (7 categories, 2 per page): past the burst.
        let report = try await a.engine.sync()
        #expect(report.applied == 3 && report.pulled == 7)
    }

    /// A bucket refilling one token in 1,000 s: once empty it stays empty for the whole test, on
    /// any machine (a faster refill let a slow sanitizer run sync before the bucket was empty).
    @Test("a sync refused with a Retry-After longer than the engine waits fails and keeps the change queued")
    func rateLimitedBeyondWaiting() async throws {
        let server = try TestServer.start(configure: {
            $0.rateLimitPerSecond = 0.001
            $0.rateLimitBurst = 2
        })
        defer { server.stop() }
        let harness = ClientHarness(server)
        let a = await Device.make(harness, "a")
        defer { a.done() }
        do {
            for _ in 0..<5 { _ = try await harness.api().me() }
            Issue.record("the server must be rate limiting this user")
        } catch LocifyError.rateLimited(let error, let retryAfter) {
            #expect(error.code == "S001" && (retryAfter ?? 0) > 5)
        }
        try await a.engine.saveCategory(name: "Not waited for")
        do {
            try await a.engine.sync()
            Issue.record("a sync told to retry in 1,000 s must fail, not wait")
        } catch LocifyError.rateLimited {
            #expect(try await a.engine.pendingChanges().count == 1, "the change stays queued")
        }
    }

    @Test("the SQLite store keeps records, outbox and cursor across launches")
    func sqliteStorePersists() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let file = TemporaryStoreFile()
        defer { file.remove() }
        let first = await Device.make(harness, "f", store: try file.open())
        let category = try await first.engine.saveCategory(name: "Persisted")
        try await first.engine.sync()
        let location = try await first.engine.saveLocation(LocationDraft(categoryID: category.id, name: "Pending", latitude: 0, longitude: 0))
        first.done()

        let relaunched = await Device.make(harness, "f", store: try file.open())
        defer { relaunched.done() }
        #expect(try await relaunched.engine.category(id: category.id)?.version == 1)
        #expect(try await relaunched.engine.pendingChanges().map(\.change.recordID) == [location.id])
        #expect(try await relaunched.engine.localSnapshot().cursor != nil)
        try await relaunched.engine.sync()
        try await expectConverged([relaunched], harness.api())
    }

    @Test("cancelling a sync stops it promptly, keeps the outbox, and the next sync completes")
    func cancelSync() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let store = InMemoryStore()
        let stuck = await Device.make(harness, "stuck", store: store)
        defer { stuck.done() }
        try await stuck.engine.saveCategory(name: "Waiting")
        FaultPlans.hang(device: stuck.name)
        let task = Task { try await stuck.engine.sync() }
        try await Task.sleep(for: .milliseconds(200))
        task.cancel()
        // No bound on the time (a loaded machine may starve the task): a cancel that did not
        // reach the request would end in the request timeout, a network error.
        await #expect(throws: LocifyError.cancelled) { try await task.value }
        #expect(try await stuck.engine.pendingChanges().count == 1)

        let healthy = await Device.make(harness, "healthy", store: store)
        defer { healthy.done() }
        try await healthy.engine.sync()
        try await expectConverged([healthy], harness.api())
    }
}
