import Foundation
@testable import LocifyClient
import Testing
import TestSupport
import TestSupportServer

/// An API client whose requests never connect (a closed port): every call fails with `.network`.
func unreachableAPI(token: @escaping LocifyAPIClient.TokenProvider = { _ in "token" }) -> LocifyAPIClient {
    // safe because: the literal is a valid URL
    LocifyAPIClient(baseURL: URL(string: "http://127.0.0.1:9")!, timeout: 5, token: token)
}

/// The first value of a status stream that satisfies `condition`.
func firstStatus(_ stream: AsyncStream<SyncStatus>, where condition: (SyncStatus) -> Bool) async -> SyncStatus? {
    for await status in stream where condition(status) { return status }
    return nil
}

/// Makes the server refuse `a`'s new places named `names` (E007): `b` deletes their category
/// before `a` pushes them. Returns the places as `a` saved them.
@discardableResult
func refusePlaces(of a: SyncEngine, deletingOn b: SyncEngine, _ names: [String]) async throws -> [Location] {
    let category = try await a.saveCategory(name: "Shared")
    try await a.sync()
    try await b.sync()
    var places: [Location] = []
    for name in names { places.append(try await a.saveLocation(LocationDraft(categoryID: category.id, name: name, latitude: 1, longitude: 2))) }
    try await b.deleteCategory(id: category.id)
    try await b.sync()
    try await a.sync()
    return places
}

/// SyncStatus (issue 26 item 1): published with replay, updated by edits, syncs, failures,
/// connectivity and settlements; refused changes kept in the store, retried and discarded.
@Suite("LocifyClient sync status: replayed status, progress, offline, refused changes")
struct SyncStatusTests {
    @Test("each new subscriber gets the current status first, and local edits update the pending count")
    func replayAndEdits() async throws {
        let engine = SyncEngine(api: unreachableAPI(), store: InMemoryStore())
        let first = await engine.statusUpdates()
        var iterator = first.makeAsyncIterator()
        let initial = await iterator.next()
        #expect(initial?.activity == .idle)
        #expect(initial?.pendingChanges == 0)
        let category = try await engine.saveCategory(name: "Cafés")
        #expect(await iterator.next()?.pendingChanges == 1)
        try await engine.saveLocation(LocationDraft(categoryID: category.id, name: "Flore", latitude: 48.85, longitude: 2.33))
        #expect(await iterator.next()?.pendingChanges == 2)
        let late = await engine.statusUpdates()
        var lateIterator = late.makeAsyncIterator()
        #expect(await lateIterator.next()?.pendingChanges == 2, "a late subscriber starts from the current value")
    }

    @Test("photos taken offline are counted in the status until they are uploaded")
    func pendingPhotos() async throws {
        let photos = try PhotoFolder()
        defer { photos.remove() }
        let engine = SyncEngine(api: unreachableAPI(), store: InMemoryStore())
        await engine.setImageUploader(FakeUploader(), settings: photos.settings)
        let category = try await engine.saveCategory(name: "Cafés")
        let urls = [try photos.photo("a.jpg").absoluteString, try photos.photo("b.jpg").absoluteString]
        try await engine.saveLocation(LocationDraft(categoryID: category.id, name: "Flore", latitude: 1, longitude: 2, imageURLs: urls))
        #expect(await engine.status.pendingImageUploads == 2)
        #expect(try await engine.pendingImageUploads() == 2)
    }

    @Test("a sync's progress: syncing with the changes pushed and pulled, then idle")
    func progress() {
        var status = SyncStatus()
        status.apply(.started, pending: 3)
        #expect(status.activity == .syncing(SyncProgress(toPush: 3)))
        status.apply(.pushed(changes: 2, applied: 2, conflicts: 0, rejected: 0), pending: 1)
        status.apply(.pulled(changes: 5, hasMore: true), pending: 1)
        #expect(status.activity == .syncing(SyncProgress(pushed: 2, toPush: 3, pulled: 5)))
        status.apply(.finished(SyncReport()), pending: 0)
        #expect(status.activity == .idle)
        status.apply(.pulled(changes: 1, hasMore: false), pending: 0)
        #expect(status.activity == .idle, "a live-mode pull outside a sync shows no progress")
    }

    @Test("a failure shows offline for the network, failed with the error otherwise; a success clears it")
    func failures() async throws {
        let offline = SyncEngine(api: unreachableAPI(), store: InMemoryStore())
        await #expect(throws: LocifyError.self) { try await offline.sync() }
        #expect(await offline.status.activity == .offline)

        struct SignedOut: Error {}
        let signedOut = SyncEngine(api: unreachableAPI { _ in throw SignedOut() }, store: InMemoryStore())
        await #expect(throws: LocifyError.self) { try await signedOut.sync() }
        guard case .failed(.tokenUnavailable) = await signedOut.status.activity else {
            Issue.record("not failed with the token's error: \(await signedOut.status)")
            return
        }

        let server = try TestServer.start()
        defer { server.stop() }
        let file = TemporaryStoreFile()
        defer { file.remove() }
        let engine = SyncEngine(api: ClientHarness(server).api(), store: try file.open())
        try await engine.saveCategory(name: "Bakeries")
        let before = Date()
        try await engine.sync()
        let status = await engine.status
        #expect(status.activity == .idle)
        #expect(status.pendingChanges == 0)
        #expect((status.lastSyncedAt ?? .distantPast) >= before.addingTimeInterval(-1))
        let relaunched = SyncEngine(api: ClientHarness(server).api(), store: try file.open())
        let replayed = await firstStatus(await relaunched.statusUpdates()) { _ in true }
        #expect(replayed?.lastSyncedAt == status.lastSyncedAt, "the last sync time is kept in the store")
    }

    @Test("the schedule's connectivity shows offline at once and clears it when back online")
    func connectivity() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let connectivity = ManualConnectivity(online: false)
        var schedule = SyncSchedule()
        schedule.connectivity = connectivity
        let engine = SyncEngine(api: ClientHarness(server).api(), store: InMemoryStore())
        await engine.start(schedule)
        #expect(await firstStatus(await engine.statusUpdates()) { $0.activity == .offline } != nil)
        connectivity.set(true)
        let synced = await firstStatus(await engine.statusUpdates()) { $0.lastSyncedAt != nil && $0.activity == .idle }
        #expect(synced != nil)
        await engine.stop()
    }

    @Test("a refused change is kept in the store with its record, counted, retried once its cause is gone, or discarded")
    func refusedChanges() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let file = TemporaryStoreFile()
        defer { file.remove() }
        let a = SyncEngine(api: harness.api(), store: try file.open())
        let b = SyncEngine(api: harness.api(), store: InMemoryStore())
        let places = try await refusePlaces(of: a, deletingOn: b, ["Orphan", "Second"])
        let (orphan, second) = (places[0], places[1])
        var status = await a.status
        #expect(status.refusedChanges == 2)
        #expect(status.unseenRefusals == 2)

        // Kept in the store: a relaunch finds them, with the record and the server's answer.
        let relaunched = SyncEngine(api: harness.api(), store: try file.open())
        let refused = try await relaunched.refusedChanges()
        #expect(refused.map(\.recordID) == [orphan.id, second.id])
        #expect(refused.allSatisfy { $0.error.code == "E007" && $0.recordKind == .location })
        #expect(await relaunched.status.refusedChanges == 2)

        // Retried while the category is still gone: refused at once, kept.
        await #expect(throws: LocifyError.self) { try await relaunched.retryRefusedChange(id: refused[0].id) }
        #expect(try await relaunched.refusedChanges().count == 2)

        // The category comes back: the retry queues the place again and the push lands.
        try await b.saveCategory(id: orphan.categoryID, name: "Shared again")
        try await b.sync()
        try await relaunched.sync()
        try await relaunched.retryRefusedChange(id: refused[0].id)
        try await relaunched.discardRefusedChange(id: refused[1].id)
        status = await relaunched.status
        #expect(status.refusedChanges == 0)
        #expect(status.pendingChanges == 1)
        try await relaunched.sync()
        #expect(try await harness.api().location(id: orphan.id).name == "Orphan")
        // Discarded, the place is as the server has it (the category's revival brought back the
        // place's refused create as the server kept it).
        let onServer = try? await harness.api().location(id: second.id)
        #expect(try await relaunched.location(id: second.id) == onServer, "a discarded change leaves the server's record")
        #expect(try await relaunched.pendingChanges().isEmpty)
        #expect(try await relaunched.refusedChanges().isEmpty)
    }

    @Test("conflicts settled and refusals count until the user looks")
    func unseenConflicts() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let aClock = SettableClock()  // set 100 s back after a's sync: its next edit is older than b's
        let a = SyncEngine(api: harness.api(), store: InMemoryStore(), clock: aClock.read)
        let b = SyncEngine(api: harness.api(), store: InMemoryStore())
        let category = try await a.saveCategory(name: "Old")
        try await a.sync()
        try await b.sync()
        aClock.set(offset: -100)
        try await a.saveCategory(id: category.id, name: "Older edit")
        try await b.saveCategory(id: category.id, name: "Newer edit")
        try await b.sync()
        try await a.sync()
        #expect(await a.status.unseenConflicts == 1)
        #expect(try await a.category(id: category.id)?.name == "Newer edit")
        await a.markStatusSeen()
        #expect(await a.status.unseenConflicts == 0)
        #expect(await a.status.unseenRefusals == 0)
    }
}
