import Foundation
import LocifyRules
import Testing

@testable import LocifyClient

/// The outbox's rules as pure functions: folding keeps what depends on what, and batches are cut
/// so the server's in-batch order (category writes, location changes, category deletes) never
/// applies a change before one it depends on.
@Suite("LocifyClient outbox: folding and batches keep dependencies")
struct OutboxRulesTests {
    let at = Date(locifyMilliseconds: 1_000)

    func category(_ id: UUID, _ name: String = "C") -> CategoryWrite { CategoryWrite(id: id, name: name, updatedAt: at) }
    func location(_ id: UUID, in category: UUID) -> LocationWrite {
        LocationWrite(id: id, categoryID: category, name: "L", latitude: 1, longitude: 2, updatedAt: at)
    }

    @Test("a rename folds into the pending create at the create's place, so the create stays ahead of its places")
    func renameKeepsCreatePlace() {
        let a = UUID()
        var outbox = OutboxState()
        outbox.enqueue(.createCategory(category(a, "A")), serverMayKnow: false, inFlight: [])
        let places = (0..<60).map { _ in UUID() }
        for place in places { outbox.enqueue(.createLocation(location(place, in: a)), serverMayKnow: false, inFlight: []) }
        outbox.enqueue(.updateCategory(category(a, "A renamed")), serverMayKnow: false, inFlight: [])
        #expect(outbox.count == 61)
        #expect(outbox.ordered.first?.change == .createCategory(category(a, "A renamed")))
        let batch = outbox.nextBatch(limit: 50)
        #expect(batch.count == 50 && batch.first?.change.recordID == a)
    }

    @Test("a place whose category's create comes later in the outbox takes that create into its batch")
    func prerequisitePulledIn() {
        let a = UUID(), b = UUID(), place = UUID()
        var outbox = OutboxState()
        outbox.enqueue(.createCategory(category(a)), serverMayKnow: false, inFlight: [])
        outbox.enqueue(.createLocation(location(place, in: a)), serverMayKnow: false, inFlight: [])
        outbox.enqueue(.createCategory(category(b)), serverMayKnow: false, inFlight: [])
        outbox.enqueue(.updateLocation(location(place, in: b)), serverMayKnow: false, inFlight: [])
        // The move folded into the place's create, which now needs b: both go in the first batch.
        let first = outbox.nextBatch(limit: 2)
        #expect(Set(first.map(\.change.recordID)) == [a, b])
        let withRoom = outbox.nextBatch(limit: 3)
        #expect(withRoom.map(\.change.recordID) == [a, b, place])
        #expect(outbox.nextBatch(limit: 50, excluding: [3]).map(\.change.recordID) == [a])
    }

    @Test("a category delete waits for every change made before it, and keeps a create its places need")
    func deleteWaitsForEarlierChanges() {
        let c = UUID(), d = UUID(), place = UUID()
        var outbox = OutboxState()
        outbox.enqueue(.createCategory(category(c)), serverMayKnow: false, inFlight: [])
        outbox.enqueue(.createLocation(location(place, in: c)), serverMayKnow: false, inFlight: [])
        outbox.enqueue(.deleteCategory(DeleteWrite(id: c, updatedAt: at, reassignCategoryID: d)), serverMayKnow: false, inFlight: [])
        #expect(outbox.count == 3, "the create stays: the place's create needs it")
        #expect(outbox.nextBatch(limit: 2).map(\.change.action) == [.create, .create])
        #expect(outbox.nextBatch(limit: 3).map(\.change.action) == [.create, .create, .delete])
        #expect(outbox.nextBatch(limit: 50, excluding: [2]).map(\.change.action) == [.create])
    }

    @Test("a category made and deleted offline with nothing in it leaves nothing; one the server may have sends its delete")
    func createThenDelete() {
        let c = UUID()
        var outbox = OutboxState()
        outbox.enqueue(.createCategory(category(c)), serverMayKnow: false, inFlight: [])
        outbox.enqueue(.deleteCategory(DeleteWrite(id: c, updatedAt: at)), serverMayKnow: false, inFlight: [])
        #expect(outbox.isEmpty)
        outbox.enqueue(.createCategory(category(c)), serverMayKnow: false, inFlight: [])
        var sent = outbox.ordered[0]
        sent.attempted = true
        outbox.put(sent)
        outbox.enqueue(.deleteCategory(DeleteWrite(id: c, updatedAt: at)), serverMayKnow: false, inFlight: [])
        #expect(outbox.ordered.map(\.change.action) == [.delete], "sent once: the server may hold it")
    }

    @Test("a write after a pending delete of the same category goes in a later batch; writes in flight are not folded into")
    func reviveAndInFlight() {
        let c = UUID()
        var outbox = OutboxState()
        outbox.enqueue(.updateCategory(category(c)), serverMayKnow: true, inFlight: [])
        outbox.enqueue(.deleteCategory(DeleteWrite(id: c, updatedAt: at)), serverMayKnow: true, inFlight: [])
        outbox.enqueue(.createCategory(category(c, "back")), serverMayKnow: true, inFlight: [])
        #expect(outbox.ordered.map(\.change.action) == [.delete, .create])
        #expect(outbox.nextBatch(limit: 50).map(\.change.action) == [.delete])
        let d = UUID()
        var other = OutboxState()
        other.enqueue(.createCategory(category(d)), serverMayKnow: false, inFlight: [])
        other.enqueue(.updateCategory(category(d, "renamed")), serverMayKnow: false, inFlight: [1])
        #expect(other.ordered.map(\.change.action) == [.create, .update])
    }

    @Test("a place made and deleted before it was ever sent leaves nothing; a delete replaces pending edits")
    func locationDelete() {
        let c = UUID(), place = UUID(), synced = UUID()
        var outbox = OutboxState()
        outbox.enqueue(.createLocation(location(place, in: c)), serverMayKnow: false, inFlight: [])
        outbox.enqueue(.deleteLocation(DeleteWrite(id: place, updatedAt: at)), serverMayKnow: false, inFlight: [])
        #expect(outbox.isEmpty)
        outbox.enqueue(.updateLocation(location(synced, in: c)), serverMayKnow: true, inFlight: [])
        outbox.enqueue(.deleteLocation(DeleteWrite(id: synced, updatedAt: at)), serverMayKnow: true, inFlight: [])
        #expect(outbox.ordered.map(\.change.action) == [.delete])
    }

    @Test("a write this device deleted its record after is superseded, also where the delete replaced edits the server may hold")
    func laterDeleteSupersedes() throws {
        let c = UUID(), place = UUID()
        var outbox = OutboxState()
        // A category and a place in it, sent (the answer lost), then renamed in every field.
        outbox.enqueue(.createCategory(category(c)), serverMayKnow: false, inFlight: [])
        outbox.enqueue(.createLocation(location(place, in: c)), serverMayKnow: false, inFlight: [])
        for var entry in outbox.ordered {
            entry.attempted = true
            outbox.put(entry)
        }
        outbox.enqueue(
            .patchCategory(CategoryPatch(category(c, "renamed"), fields: Set(CategoryField.allCases))), serverMayKnow: true, inFlight: [])
        let create = try #require(outbox.ordered.first)
        #expect(outbox.isSuperseded(create))
        // The delete replaces the rename (sent too, perhaps applied) and keeps the create the place needs.
        outbox.enqueue(.deleteCategory(DeleteWrite(id: c, updatedAt: at)), serverMayKnow: true, inFlight: [])
        #expect(outbox.ordered.map(\.change.action) == [.create, .create, .delete])
        #expect(outbox.isSuperseded(create))
        // A place edited whole, then deleted, while its create and edit were in flight: all three stay queued.
        var places = OutboxState()
        places.enqueue(.createLocation(location(place, in: c)), serverMayKnow: false, inFlight: [])
        places.enqueue(
            .patchLocation(LocationPatch(location(place, in: c), fields: Set(LocationField.allCases))), serverMayKnow: true, inFlight: [1])
        places.enqueue(.deleteLocation(DeleteWrite(id: place, updatedAt: at)), serverMayKnow: true, inFlight: [1, 2])
        #expect(places.ordered.map(\.change.action) == [.create, .patch, .delete])
        #expect(places.ordered.dropLast().allSatisfy(places.isSuperseded))
        #expect(!places.isSuperseded(places.ordered[2]), "a delete is never superseded")
    }

    @Test("a folded edit keeps the create's created_at")
    func createdAtKept() {
        let c = UUID(), place = UUID()
        var first = location(place, in: c)
        first.createdAt = Date(locifyMilliseconds: 500)
        var later = location(place, in: c)
        later.name = "edited"
        later.createdAt = Date(locifyMilliseconds: 900)
        var outbox = OutboxState()
        outbox.enqueue(.createLocation(first), serverMayKnow: false, inFlight: [])
        outbox.enqueue(.updateLocation(later), serverMayKnow: false, inFlight: [])
        guard case .createLocation(let write) = outbox.ordered[0].change else {
            Issue.record("still a create")
            return
        }
        #expect(write.name == "edited" && write.createdAt == Date(locifyMilliseconds: 500))
    }

    @Test("an edit refused after its transaction began leaves the queued changes and the following edits as they were")
    func refusedEditKeepsOutbox() async throws {
        // No server is needed: edits only queue. The engine's transactions take its outbox over
        // (no copy per edit); one that throws must leave the queue intact for the next.
        let api = LocifyAPIClient(baseURL: URL(fileURLWithPath: "/")) { _ in "unused" }
        let engine = SyncEngine(api: api, store: InMemoryStore())
        let category = try await engine.saveCategory(name: "A")
        let place = try await engine.saveLocation(LocationDraft(categoryID: category.id, name: "P", latitude: 1, longitude: 2))
        let before = try await engine.pendingChanges()
        await #expect(throws: LocifyError.self) {
            try await engine.saveLocation(LocationDraft(categoryID: UUID(), name: "Nowhere", latitude: 1, longitude: 2))
        }
        await #expect(throws: LocifyError.self) { try await engine.deleteLocation(id: UUID()) }
        #expect(try await engine.pendingChanges() == before)
        var draft = LocationDraft(place)
        draft.name = "P renamed"
        try await engine.saveLocation(draft)
        let after = try await engine.pendingChanges()
        #expect(after.count == 2, "the rename folds into the queued create")
        #expect(after.last?.change.action == .create && after.last?.change.recordID == place.id)
        #expect(try await engine.location(id: place.id)?.name == "P renamed")
    }
}
