import Foundation
import GRDB
@testable import LocifyClient
import Synchronization
import Testing
import TestSupport
import TestSupportServer

/// A store that keeps, for each commit, how many records it wrote (the rest as InMemoryStore).
final class RecordingStore: InMemoryWrapper, Sendable {
    let inner = InMemoryStore()
    private let written = Mutex<[Int]>([])

    /// The records written by each commit that wrote any, in order.
    var recordCommits: [Int] { written.withLock { $0 }.filter { $0 > 0 } }

    private let bulkLoadCalls = Mutex<[Bool]>([])
    /// Whether commits fail once a bulk load began (a disk filling up during a first sync).
    private let failsWhileLoading: Bool

    init(failsWhileLoading: Bool = false) { self.failsWhileLoading = failsWhileLoading }

    /// The `bulkLoad` calls, in order.
    var bulkLoads: [Bool] { bulkLoadCalls.withLock { $0 } }
    func bulkLoad(_ active: Bool) throws {
        bulkLoadCalls.withLock { $0.append(active) }
        if failsWhileLoading, active { inner.failCommits(with: CocoaError(.fileWriteOutOfSpace)) }
    }

    func commit(_ changes: LocalChanges) throws {
        try inner.commit(changes)
        written.withLock { $0.append(changes.upsertedCategories.count + changes.upsertedLocations.count) }
    }
}

/// How a pull stores what it fetches (issue 22 item 6): the first page at once, the rest in few
/// commits while the next page is on its way, and never over an edit made meanwhile.
@Suite("LocifyClient pulls: the first page at once, the rest in few commits, edits made meanwhile kept")
struct PullStorageTests {
    /// A category and `count` places in it, created on the server by another client.
    static func seed(_ api: LocifyAPIClient, places count: Int) async throws -> (category: UUID, places: [UUID]) {
        let category = try await api.createCategory(CategoryWrite(id: UUID(), name: "Seeded"))
        let places = (0..<count).map { _ in UUID() }
        for start in stride(from: 0, to: count, by: 50) {
            let changes = places[start..<min(start + 50, count)].enumerated().map { offset, id in
                PushChange.createLocation(
                    LocationWrite(id: id, categoryID: category.id, name: "P\(start + offset)", latitude: 1, longitude: 2))
            }
            _ = try await api.push(changes)
        }
        return (category.id, places)
    }

    @Test("a first sync stores its first page at once and the rest of the snapshot in fewer commits than pages")
    func firstPageAtOnceRestBatched() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        _ = try await Self.seed(harness.api(), places: 95)
        let total = try await harness.api().allCategories().count + 95
        let store = RecordingStore()
        let engine = SyncEngine(api: harness.api(), store: store)
        await engine.setPullLimit(10)
        // Batched by size only: on a loaded machine a page may take more than the second after
        // which held pages are stored anyway.
        await engine.setPullCommitInterval(.seconds(3600))
        let report = try await engine.sync()
        #expect(report.pulled == total)
        let pages = (total + 9) / 10
        #expect(store.recordCommits.first == 10, "the first page is stored alone: \(store.recordCommits)")
        #expect(store.recordCommits.count < pages, "\(pages) pages in \(store.recordCommits.count) commits: \(store.recordCommits)")
        #expect(store.recordCommits.reduce(0, +) == total)
        #expect(try await engine.locations().count == 95)
    }

    @Test("a first sync into an empty store is one bulk load, ended also when the sync fails; later syncs and a store holding records are not")
    func bulkLoadOfEmptyStore() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        _ = try await Self.seed(harness.api(), places: 30)
        let store = RecordingStore()
        let engine = SyncEngine(api: harness.api(), store: store)
        await engine.setPullLimit(10)
        _ = try await engine.sync()
        #expect(store.bulkLoads == [true, false])
        _ = try await engine.sync()
        #expect(store.bulkLoads == [true, false], "a pull from a cursor is no bulk load")

        // A store holding an offline edit keeps its indexes through its first sync.
        let holding = RecordingStore()
        let offline = SyncEngine(api: harness.api(), store: holding)
        try await offline.saveCategory(name: "Offline")
        _ = try await offline.sync()
        #expect(holding.bulkLoads.isEmpty)

        // A first sync that fails (here its first page's commit) still ends the bulk load.
        let failing = RecordingStore(failsWhileLoading: true)
        let full = SyncEngine(api: harness.api(), store: failing)
        await #expect(throws: LocifyError.self) { _ = try await full.sync() }
        #expect(failing.bulkLoads == [true, false])
    }

    @Test("SQLiteStore: a bulk load drops the listing's indexes and builds them at its end; a load cut short gets them back on opening")
    func sqliteBulkLoadIndexes() throws {
        let file = TemporaryStoreFile()
        defer { file.remove() }
        let listingIndexes: Set<String> = [
            "location_by_created", "location_by_updated", "location_by_name", "location_by_category", "location_by_category_created",
        ]
        func indexes() throws -> Set<String> {
            let queue = try DatabaseQueue(path: file.url.path)
            defer { try? queue.close() }
            return try queue.read { db in
                Set(try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'location'"))
            }
        }
        do {
            let store = try file.open()
            #expect(try indexes().isSuperset(of: listingIndexes))
            try store.bulkLoad(true)
            #expect(try indexes().isDisjoint(with: listingIndexes))
            try store.bulkLoad(false)
            #expect(try indexes().isSuperset(of: listingIndexes))
            // Cut short: the app is killed before the load ends.
            try store.bulkLoad(true)
        }
        #expect(try indexes().isDisjoint(with: listingIndexes))
        let reopened = try file.open()
        #expect(try indexes().isSuperset(of: listingIndexes))
        #expect(try reopened.locations(LocalQuery(sort: .name)).isEmpty)
    }

    @Test("an edit made while a pull holds or fetches pages keeps precedence over the pages that arrive after it")
    func editDuringPullKept() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let seeded = try await Self.seed(harness.api(), places: 60)
        let device = "pulledit\(UInt32.random(in: 0...UInt32.max))"
        defer { FaultPlans.remove(device: device) }
        // Every request after /v1/info is slow, so the pull is under way while the edit is made.
        FaultPlans.script(device: device, [.none] + Array(repeating: .delayed(150), count: 12))
        let file = TemporaryStoreFile()
        defer { file.remove() }
        let engine = SyncEngine(api: harness.faultyAPI(device: device), store: try file.open())
        await engine.setPullLimit(10)
        let sync = Task { try await engine.sync() }
        // Once the category has arrived, the user edits the last place, which a later page holds.
        while try await engine.category(id: seeded.category) == nil { try await Task.sleep(for: .milliseconds(10)) }
        let last = try #require(seeded.places.last)
        try await engine.saveLocation(LocationDraft(id: last, categoryID: seeded.category, name: "Edited during the pull", latitude: 3, longitude: 4))
        _ = try await sync.value
        #expect(try await engine.location(id: last)?.name == "Edited during the pull")
        #expect(try await engine.locations().count == 60)
        try await engine.sync()
        #expect(try await harness.api().location(id: last).name == "Edited during the pull")
    }
}
