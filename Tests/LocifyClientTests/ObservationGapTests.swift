import Foundation
import LocifyClient
import Testing
import TestSupport

/// Issue 34 item 7 (in part): a live query's current value is there before the first `await`,
/// and commits made through another connection to the store's file (a widget, a share
/// extension) reach the app's engine and observers.
@Suite("LocifyClient observation: the first value at once, commits of another connection (issue 34 item 7)")
struct ObservationGapTests {
    @Test("a live query's current value is read synchronously, and is the first value its iteration gives")
    func currentValueBeforeTheFirstAwait() async throws {
        let file = TemporaryStoreFile()
        defer { file.remove() }
        let engine = SyncEngine(api: unreachableAPI(), store: try file.open())
        let cafes = try await engine.saveCategory(name: "Cafés")
        let flore = try await engine.saveLocation(LocationDraft(categoryID: cafes.id, name: "Flore", latitude: 1, longitude: 2))
        let live = engine.observeLocations(LocalQuery(sort: .name))
        #expect(try live.currentValue() == [flore], "a view's first frame shows the list, not an empty one")
        var iterator = live.makeAsyncIterator()
        #expect(try await iterator.next() == [flore])
        #expect(throws: LocifyError.self, "a search the server refuses") {
            try engine.observeLocations(LocalQuery(search: "\u{0}")).currentValue()
        }
    }

    @Test("a commit through another connection to the file (a widget) reaches the app's observers and outbox once announced")
    func commitsOfAnotherConnection() async throws {
        let file = TemporaryStoreFile()
        defer { file.remove() }
        let app = SyncEngine(api: unreachableAPI(), store: try file.open())
        let cafes = try await app.saveCategory(name: "Cafés")
        var categories = app.observeCategories().makeAsyncIterator()
        #expect(try await categories.next()?.map(\.name) == ["Cafés"])
        // The widget's own engine on its own connection to the same file.
        let widget = SyncEngine(api: unreachableAPI(), store: try file.open())
        try await widget.saveCategory(name: "Bars")
        try await app.reloadAfterExternalChanges()
        #expect(try await categories.next()?.map(\.name) == ["Bars", "Cafés"])
        #expect(try await app.pendingChanges().count == 2, "the widget's edit is in the app's outbox, to be pushed")
        #expect(await app.status.pendingChanges == 2)
        _ = cafes
    }
}

/// Issue 34 item 7: the scheduler's state is part of the observable status.
@Suite("LocifyClient status: the scheduler's state is observable (issue 34 item 7)")
struct ScheduleStatusTests {
    @Test("the status carries the scheduler's state: online, failures in a row, the planned retry; none once stopped")
    func scheduleInTheStatus() async throws {
        let engine = SyncEngine(api: unreachableAPI(), store: InMemoryStore())
        let clock = HandMovedClock()
        var schedule = SyncSchedule()
        schedule.clock = clock
        schedule.random = { 1 }
        schedule.initialBackoff = .seconds(1)
        schedule.initialAppState = .background
        let updates = await engine.statusUpdates()
        _ = try await engine.saveCategory(name: "Made offline")
        await engine.start(schedule)  // its first sync cannot reach the server
        let failed = await firstStatus(updates) { $0.schedule?.nextAttempt?.reason == .retry }
        #expect(failed?.schedule?.consecutiveFailures == 1)
        #expect(failed?.schedule?.isOnline == true && failed?.schedule?.isLive == false)
        #expect(failed?.pendingChanges == 1 && failed?.refusedChanges == 0, "the counts beside it")
        await engine.stop()
        #expect(await engine.status.schedule == nil)
    }
}

/// Issue 34 item 7: a query made without a limit reads a page, not the whole copy.
@Suite("LocifyClient queries: the default query is bounded (issue 34 item 7)")
struct BoundedQueryTests {
    @Test("LocalQuery() reads the newest 100 locations (defaultLimit); limit: nil reads all; the count counts all")
    func defaultQueryIsBounded() async throws {
        let file = TemporaryStoreFile()
        defer { file.remove() }
        let engine = SyncEngine(api: unreachableAPI(), store: try file.open())
        let cafes = try await engine.saveCategory(name: "Cafés")
        for index in 0...LocalQuery.defaultLimit {
            try await engine.saveLocation(LocationDraft(categoryID: cafes.id, name: "Place \(index)", latitude: 1, longitude: 2))
        }
        #expect(LocalQuery.defaultLimit == 100)
        #expect(try await engine.locations(LocalQuery()).count == 100)
        #expect(try engine.observeLocations().currentValue().count == 100)
        #expect(try await engine.locations(LocalQuery(limit: nil)).count == 101)
        #expect(try await engine.locationCount() == 101)
    }
}
