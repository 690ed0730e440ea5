import Foundation
import LocifyClient
import Synchronization
import Testing
import TestSupport
import TestSupportServer

/// The seeds of the model-based history test: 50 per network in CI (100 histories); `LOCIFY_CLIENT_HISTORY_SEEDS=<n>`
/// (scripts/client-soak) runs n from `LOCIFY_CLIENT_HISTORY_FIRST_SEED` (default 10000) instead,
/// and `LOCIFY_CLIENT_HISTORY_ACTIONS` sets the actions per history (default 300).
enum HistorySeeds {
    static var list: [UInt64] {
        let environment = ProcessInfo.processInfo.environment
        guard let text = environment["LOCIFY_CLIENT_HISTORY_SEEDS"], let count = UInt64(text), count > 0 else {
            return Array(1...50)
        }
        let first = environment["LOCIFY_CLIENT_HISTORY_FIRST_SEED"].flatMap { UInt64($0) } ?? 10_000
        return (0..<count).map { first + $0 }
    }

    static var actions: Int {
        ProcessInfo.processInfo.environment["LOCIFY_CLIENT_HISTORY_ACTIONS"].flatMap { Int($0) } ?? 300
    }
}

/// One server for every history (each seed is its own user): starting a server per seed would
/// cost more than the history.
enum HistoryServer {
    /// Pushes of 8 changes at most, so bursts and offline stretches span many batches.
    static let maxPushChanges = 8
    static let shared: Result<TestServer, any Error> = Result {
        try TestServer.start(configure: { $0.maxPushChanges = maxPushChanges })
    }
}

/// The network a history runs over.
enum HistoryNetwork: String, Sendable, CaseIterable, CustomTestStringConvertible {
    /// Every request answered.
    case reliable
    /// A quarter of the requests fail: before sending, after the server applied them (answer
    /// dropped, time-out, 500), or answered 500, 503 or 429 with `Retry-After`.
    case faulty

    var testDescription: String { rawValue }
}

/// The model-based history test of issue 22: one device, one user, random histories of the
/// user's actions with `sync()` at random points. After the last sync, the device's store, the
/// same store reopened from disk, and the server's listings each equal the model exactly, and the
/// server refused nothing.
@Suite("LocifyClient model-based histories: one device never loses an edit")
struct HistoryModelTests {
    /// Histories played at once: enough to keep the machine busy, few enough that the rest of the
    /// suite, running alongside, still gets threads (parameterized cases would all start at once).
    static let concurrency = 8

    @Test("random histories end with the device, the reopened store and the server equal to the user's actions")
    func histories() async throws {
        let server = try HistoryServer.shared.get()
        let cases = HistoryNetwork.allCases.flatMap { network in HistorySeeds.list.map { (network, $0) } }
        try await withThrowingTaskGroup(of: Void.self) { group in
            var next = cases.makeIterator()
            func start() {
                guard let (network, seed) = next.next() else { return }
                group.addTask { try await Self.history(server, network: network, seed: seed) }
            }
            for _ in 0..<Self.concurrency { start() }
            while try await group.next() != nil { start() }
        }
    }

    @Test("a seed draws the same actions every time, whatever ids the server gave its default categories")
    func seedFixesTheHistory() {
        // The same default categories with new random ids, as two accounts (or two runs) get them.
        func actions(seed: UInt64) -> [String] {
            var model = UserModel()
            for name in ["Food", "Home", "Work"] { model.categories[UUID()] = .init(name: name, icon: nil) }
            let defaults = Dictionary(uniqueKeysWithValues: model.categories.map { ($0.key, $0.value.name) })
            var generator = HistoryGenerator(seed: seed, burstSize: 9...24)
            var drawn: [String] = []
            for _ in 0..<400 {
                for action in generator.next(model, visibleCategories: Array(model.categories.keys)) {
                    model.apply(action)
                    // Every field, ids in full; a default category's id (new each run) by its name.
                    let payload = Mirror(reflecting: action).children.map { "\($0.label ?? "") \($0.value)" }.joined()
                    drawn.append(defaults.reduce(payload.isEmpty ? "\(action)" : payload) { text, entry in text.replacingOccurrences(of: entry.key.uuidString, with: entry.value) })
                }
            }
            return drawn
        }
        for seed: UInt64 in [1, 10_000] {
            let (first, second) = (actions(seed: seed), actions(seed: seed))
            let differing = first.indices.first { $0 >= second.count || first[$0] != second[$0] }
            #expect(first.count == second.count && differing == nil, "seed \(seed), action \((differing ?? -1) + 1): \(differing.map { first[$0] } ?? "")")
        }
    }

    /// One history; a failure names its seed and network and prints the history.
    static func history(_ server: TestServer, network: HistoryNetwork, seed: UInt64) async throws {
        let harness = ClientHarness(server, uid: "history-\(network.rawValue)-\(seed)-\(UUID().uuidString.prefix(6))")
        let run = try await HistoryRun(harness, network: network, seed: seed)
        defer { run.finish() }
        do {
            try await run.play(actions: HistorySeeds.actions)
            try await run.expectFinalStateEqualsModel()
        } catch {
            Issue.record("seed \(seed) over the \(network.rawValue) network stopped: \(error)")
        }
    }
}

/// One history: the device, the model, and the checks.
final class HistoryRun: Sendable {
    let harness: ClientHarness
    let network: HistoryNetwork
    let seed: UInt64
    let store: TemporaryStoreFile
    let device: String
    let engine: SyncEngine
    let events: EventLog
    private let state: Mutex<(model: UserModel, history: [UserAction], createdAt: [UUID: Date])>

    /// Whether ``finish()`` removes the store (not when it was handed in).
    private let ownsStore: Bool

    /// A new device with an empty store, of a user whose account already exists.
    convenience init(_ harness: ClientHarness, network: HistoryNetwork, seed: UInt64) async throws {
        // The account exists before the device's first sync (so the model knows its default
        // categories); the device sees them only once it has pulled.
        let api = harness.api()
        _ = try await api.me()
        let defaults = UserModel(categories: try await api.allCategories(), locations: [])
        try await self.init(harness, network: network, seed: seed, store: TemporaryStoreFile(), ownsStore: true, model: { _ in defaults })
    }

    /// A device that goes on from an existing store (a relaunch after a crash): the model starts
    /// as what the device shows, plus the server's default categories it has not pulled yet.
    convenience init(resuming store: TemporaryStoreFile, _ harness: ClientHarness, seed: UInt64) async throws {
        let defaults = try await harness.api().allCategories().filter(\.isDefault)
        try await self.init(harness, network: .reliable, seed: seed, store: store, ownsStore: false) { engine in
            let pending = Set(try await engine.pendingChanges().map(\.change.recordID))
            var categories = try await engine.categories()
            for category in defaults where !pending.contains(category.id) && !categories.contains(where: { $0.id == category.id }) {
                categories.append(category)
            }
            return UserModel(categories: categories, locations: try await engine.locations())
        }
    }

    private init(
        _ harness: ClientHarness, network: HistoryNetwork, seed: UInt64, store: TemporaryStoreFile, ownsStore: Bool,
        model: (SyncEngine) async throws -> UserModel
    ) async throws {
        self.harness = harness
        self.network = network
        self.seed = seed
        self.store = store
        self.ownsStore = ownsStore
        let device = "h\(network == .faulty ? "f" : "r")\(seed)x\(UInt32.random(in: 0...UInt32.max))"
        let engine = SyncEngine(api: harness.faultyAPI(device: device), store: try store.open())
        await engine.setMaxRetryAfter(0)
        await engine.setPullLimit(50)
        self.device = device
        self.engine = engine
        events = await EventLog(engine)
        state = Mutex((try await model(engine), [], [:]))
        if network == .faulty {
            FaultPlans.set(device: device, failureRate: 0.25, seed: seed &* 7919, kinds: Fault.everyKind)
        }
    }

    func finish() {
        events.stop()
        FaultPlans.remove(device: device)
        if ownsStore { store.remove() }
    }

    var model: UserModel { state.withLock { $0.model } }
    var history: [UserAction] { state.withLock { $0.history } }

    /// The seed, the network and the history so far, for a failure message.
    var context: String {
        "seed \(seed) over the \(network.rawValue) network, history:\n"
            + history.enumerated().map { "  \($0.offset + 1). \($0.element)" }.joined(separator: "\n")
    }

    /// Plays `count` actions, then syncs over a sound network until the sync completes.
    func play(actions count: Int) async throws {
        var generator = HistoryGenerator(seed: seed, burstSize: HistoryServer.maxPushChanges + 1...3 * HistoryServer.maxPushChanges)
        var played = 0
        // The model's categories the device does not show yet (the server's defaults before its
        // first pull): only a sync can change that.
        var unseen = try await unshownCategories(among: Set(model.categories.keys))
        while played < count {
            let visible = model.categories.keys.filter { !unseen.contains($0) }
            for action in generator.next(model, visibleCategories: visible) {
                try await perform(action)
                played += 1
                if case .sync = action, !unseen.isEmpty { unseen = try await unshownCategories(among: unseen) }
            }
        }
        FaultPlans.set(device: device, failureRate: 0, seed: 0)
        try await syncToTheEnd()
    }

    private func unshownCategories(among ids: Set<UUID>) async throws -> Set<UUID> {
        var unshown = Set<UUID>()
        for id in ids where try await engine.category(id: id) == nil { unshown.insert(id) }
        return unshown
    }

    private func perform(_ action: UserAction) async throws {
        state.withLock { $0.history.append(action) }
        switch action {
        case .sync:
            try await syncTolerantly()
            return
        case .saveCategory(let id, let name, let icon):
            try await expectAccepted(action) { _ = try await self.engine.saveCategory(id: id, name: name, icon: icon) }
        case .deleteCategory(let id, let target):
            try await expectAccepted(action) { _ = try await self.engine.deleteCategory(id: id, reassignTo: target) }
        case .saveLocation(let id, let value):
            try await expectAccepted(action) {
                let saved = try await self.engine.saveLocation(value.draft(id))
                self.state.withLock { state in
                    if state.createdAt[id] == nil { state.createdAt[id] = saved.createdAt }
                }
            }
        case .deleteLocation(let id):
            try await expectAccepted(action) { _ = try await self.engine.deleteLocation(id: id) }
        }
        state.withLock { $0.model.apply(action) }
    }

    /// The engine must take every action the user can take on what the model holds: a refusal
    /// means the device lost something the user made.
    private func expectAccepted(_ action: UserAction, _ body: @Sendable () async throws -> Void) async throws {
        do {
            try await body()
        } catch {
            let difference = try await deviceDifference()
            let recent = events.all.filter { if case .pushed = $0 { false } else { true } }.suffix(80).map { String(String(describing: $0).prefix(160)) }.joined(separator: "\n")
            Issue.record("the device refused \(action): \(error)\nThe device differs from the model:\n\(difference)\n\(context)\nThe last events:\n\(recent)")
            throw error
        }
    }

    /// A sync over the (faulty) network: transient failures are expected, anything else is a bug.
    private func syncTolerantly() async throws {
        do {
            try await engine.sync()
        } catch let error as LocifyError where error.isTransient {
        } catch {
            Issue.record("sync failed with a non-transient error \(error)\n\(context)")
            throw error
        }
    }

    private func syncToTheEnd() async throws {
        for attempt in 1...10 {
            do {
                try await engine.sync()
                return
            } catch let error as LocifyError where error.isTransient && attempt < 10 {
                try await Task.sleep(for: .milliseconds(100 * attempt))
            }
        }
    }

    private func deviceDifference() async throws -> String {
        let device = UserModel(categories: try await engine.categories(), locations: try await engine.locations())
        return model.difference(from: device)
    }

    /// After the final sync: the device, the store reopened from disk, and the server's listings
    /// each equal the model; nothing was refused or lost to a conflict; nothing is pending; every
    /// place created on the device keeps the time of its first edit as `created_at`.
    func expectFinalStateEqualsModel() async throws {
        let expected = model
        let refusals = events.all.filter { event in
            switch event {
            case .changeRejected, .conflictResolved: return true
            default: return false
            }
        }
        #expect(refusals.isEmpty, "the server refused changes: \(refusals)\n\(context)")
        #expect(try await engine.pendingChanges().isEmpty, "nothing pending after the final sync\n\(context)")

        let onDevice = UserModel(categories: try await engine.categories(), locations: try await engine.locations())
        #expect(onDevice == expected, "the device equals the model:\n\(expected.difference(from: onDevice))\n\(context)")

        let reopened = SyncEngine(api: harness.api(), store: try store.open())
        let fromDisk = UserModel(categories: try await reopened.categories(), locations: try await reopened.locations())
        #expect(fromDisk == expected, "the reopened store equals the model:\n\(expected.difference(from: fromDisk))\n\(context)")
        #expect(try await reopened.pendingChanges().isEmpty, "the reopened store has nothing pending\n\(context)")

        let api = harness.api()
        let serverLocations = try await api.allLocations()
        let onServer = UserModel(categories: try await api.allCategories(), locations: serverLocations)
        #expect(onServer == expected, "the server equals the model:\n\(expected.difference(from: onServer))\n\(context)")

        let createdAt = state.withLock { $0.createdAt }
        let wrongCreation = serverLocations.filter { location in
            createdAt[location.id].map { $0.locifyMilliseconds != location.createdAt.locifyMilliseconds } ?? false
        }
        #expect(wrongCreation.isEmpty, "created_at is the time of the place's first edit: \(wrongCreation.map(\.name))\n\(context)")
        // One line per history, summed by scripts/client-soak.
        let counts = FaultPlans.counts(device: device)
        print(
            "client-history seed \(seed) \(network.rawValue): actions \(history.count) syncs \(history.filter { if case .sync = $0 { true } else { false } }.count)"
                + " categories \(expected.categories.count) locations \(expected.locations.count) requests \(counts.requests) failed \(counts.failures)"
                + " lost \(expected == onServer && expected == onDevice && expected == fromDisk ? 0 : 1)")
    }
}
