import Foundation
import LocifyClient
import Synchronization
import Testing
import TestSupport
import TestSupportServer

/// The three sequences of issue 22 that lost a new user's places with one device, no other
/// device, no conflict and a reliable network.
@Suite("LocifyClient outbox regressions: one device, reliable network")
struct OutboxRegressionTests {
    /// A device on the plain network of a fresh user of a server with the default limits (50
    /// changes per push), after a first sync.
    private static func freshDevice() async throws -> (TestServer, ClientHarness, Device) {
        let server = try TestServer.start()
        let harness = ClientHarness(server)
        let device = await Device.make(harness, "one")
        try await device.engine.sync()
        return (server, harness, device)
    }

    /// The device and the server hold exactly these places, in these categories, and the server
    /// refused nothing.
    private static func expectPlaces(
        _ expected: [UUID: UUID], _ device: Device, _ harness: ClientHarness, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let local = Dictionary(uniqueKeysWithValues: try await device.engine.locations().map { ($0.id, $0.categoryID) })
        let server = Dictionary(uniqueKeysWithValues: try await harness.api().allLocations().map { ($0.id, $0.categoryID) })
        let keptLocally = local.filter { expected[$0.key] == $0.value }.count
        let keptOnServer = server.filter { expected[$0.key] == $0.value }.count
        #expect(local == expected, "the device keeps every place where it was put: \(keptLocally) of \(expected.count)", sourceLocation: sourceLocation)
        #expect(server == expected, "the server has every place where it was put: \(keptOnServer) of \(expected.count)", sourceLocation: sourceLocation)
        let refused = device.events.all.filter { if case .changeRejected = $0 { true } else { false } }
        #expect(refused.isEmpty, "the server refused \(refused.count) changes", sourceLocation: sourceLocation)
        try await expectConverged([device], harness.api(), sourceLocation: sourceLocation)
    }

    @Test("create category A, add 60 places in it, rename A, sync: all 60 places reach the server")
    func renameAfterBurst() async throws {
        let (server, harness, device) = try await Self.freshDevice()
        defer { device.done(); server.stop() }
        let a = try await device.engine.saveCategory(name: "A")
        var expected: [UUID: UUID] = [:]
        for index in 0..<60 {
            let place = try await device.engine.saveLocation(LocationDraft(categoryID: a.id, name: "Place \(index)", latitude: 1, longitude: 2))
            expected[place.id] = a.id
        }
        try await device.engine.saveCategory(id: a.id, name: "A renamed")
        try await device.engine.sync()
        try await Self.expectPlaces(expected, device, harness)
        #expect(try await harness.api().category(id: a.id).name == "A renamed")
    }

    @Test("create A, add place L, delete another category B, rename A, sync: L is kept")
    func renameAfterAnotherDelete() async throws {
        let (server, harness, device) = try await Self.freshDevice()
        defer { device.done(); server.stop() }
        let b = try await device.engine.saveCategory(name: "B")
        try await device.engine.sync()
        let a = try await device.engine.saveCategory(name: "A")
        let place = try await device.engine.saveLocation(LocationDraft(categoryID: a.id, name: "L", latitude: 1, longitude: 2))
        try await device.engine.deleteCategory(id: b.id)
        try await device.engine.saveCategory(id: a.id, name: "A renamed")
        try await device.engine.sync()
        try await Self.expectPlaces([place.id: a.id], device, harness)
    }

    @Test("create C, add place L in C, delete C reassigning to D, sync: L is in D")
    func deleteReassignOfNewCategory() async throws {
        let (server, harness, device) = try await Self.freshDevice()
        defer { device.done(); server.stop() }
        let d = try await device.engine.saveCategory(name: "D")
        try await device.engine.sync()
        let c = try await device.engine.saveCategory(name: "C")
        let place = try await device.engine.saveLocation(LocationDraft(categoryID: c.id, name: "L", latitude: 1, longitude: 2))
        try await device.engine.deleteCategory(id: c.id, reassignTo: d.id)
        try await device.engine.sync()
        try await Self.expectPlaces([place.id: d.id], device, harness)
    }

    @Test("rename place L in A, delete A moving its places to B, delete B, sync: no commit holds L without its category")
    func placeOfAReassignedThenDeletedCategory() async throws {
        let server = try TestServer.start()
        let harness = ClientHarness(server)
        let store = OrphanWatchingStore()
        let device = await Device.make(harness, "one", store: store)
        defer { device.done(); server.stop() }
        let a = try await device.engine.saveCategory(name: "A")
        let b = try await device.engine.saveCategory(name: "B")
        let place = try await device.engine.saveLocation(LocationDraft(categoryID: a.id, name: "L", latitude: 1, longitude: 2))
        try await device.engine.sync()
        var draft = LocationDraft(place)
        draft.name = "L renamed"
        try await device.engine.saveLocation(draft)
        try await device.engine.deleteCategory(id: a.id, reassignTo: b.id)
        try await device.engine.deleteCategory(id: b.id)
        try await device.engine.sync()
        // A crash after the push's commit (before the pull's) would leave such a place on the device.
        #expect(store.orphans.isEmpty, "commits held places whose category is not in the store: \(store.orphans)")
        try await Self.expectPlaces([:], device, harness)
    }
}

/// A store that notes, after each commit, the places whose category is not in the store (what a
/// crash right after that commit would leave); the rest as InMemoryStore.
final class OrphanWatchingStore: InMemoryWrapper, Sendable {
    let inner = InMemoryStore()
    private let found = Mutex<[String]>([])

    /// The names of the places found without their category, one per commit that held them.
    var orphans: [String] { found.withLock { $0 } }

    func fieldStamps(of kind: RecordKind, id: UUID) throws -> [Int64]? { try inner.fieldStamps(of: kind, id: id) }

    func commit(_ changes: LocalChanges) throws {
        try inner.commit(changes)
        let categories = Set(try inner.categories().map(\.id))
        let orphans = try inner.locations(LocalQuery(limit: nil)).filter { !categories.contains($0.categoryID) }.map(\.name)
        found.withLock { $0 += orphans }
    }
}
