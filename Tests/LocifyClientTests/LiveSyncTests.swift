import Foundation
import LocifyAPI
import LocifyClient
import Synchronization
import Testing
import TestSupport
import TestSupportServer

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A store that notes when each location version (by name: every write in these tests names it
/// uniquely) first reached it: the moment a change shows on the device.
final class ArrivalStore: InMemoryWrapper, Sendable {
    let inner = InMemoryStore()
    private let arrivals = Mutex<[String: ContinuousClock.Instant]>([:])

    func commit(_ changes: LocalChanges) throws {
        try inner.commit(changes)
        let now = ContinuousClock.now
        arrivals.withLock { arrivals in
            for location in changes.upsertedLocations where arrivals[location.name] == nil { arrivals[location.name] = now }
        }
    }

    /// When a location named `name` was first stored.
    func arrival(of name: String) -> ContinuousClock.Instant? { arrivals.withLock { $0[name] } }
}

/// Polls `condition` every 5 ms until it holds or `timeout` passes (a generous bound, not a
/// figure: a loaded sanitizer run starves async tests for minutes); a condition that throws counts
/// as not holding yet.
func until(_ timeout: Duration = .seconds(300), _ condition: () async throws -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if (try? await condition()) == true { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return (try? await condition()) == true
}

/// Counts the requests an API client makes: each asks its token provider once.
final class TokenCounter: Sendable {
    let count = Atomic<Int>(0)

    func provider(_ harness: ClientHarness) -> LocifyAPIClient.TokenProvider {
        let tokens = harness.tokens
        return { [self] force in
            count.add(1, ordering: .relaxed)
            return try await tokens(force)
        }
    }

    var value: Int { count.load(ordering: .relaxed) }
}

/// Runs blocking work (an application's shutdown) off the cooperative pool.
func offThePool(_ body: @escaping @Sendable () throws -> Void) async throws {
    let thread = BackgroundThread(body)
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
        DispatchQueue.global().async { continuation.resume(with: Result { try thread.join() }) }
    }
}

/// Ends live mode on devices of the fault-injecting network with no request in flight: their next
/// requests hang (never forwarded), the instance answers their open long-polls, and only once each
/// has sent its next (hanging) request are the tasks cancelled. A forwarded answer arriving after
/// its request was cancelled would reach a task FoundationNetworking has already dropped (it traps).
func stopLive(_ tasks: [Task<Void, Never>], devices: [String], on application: Application) async {
    let before = devices.map { FaultPlans.counts(device: $0).requests }
    for device in devices { FaultPlans.hang(device: device) }
    application.server.answerWaitingRequests()
    let quiet = await until(.seconds(30)) { zip(devices, before).allSatisfy { FaultPlans.counts(device: $0).requests > $1 } }
    #expect(quiet, "every device sent its next request")
    for task in tasks { task.cancel() }
    for task in tasks { await task.value }
}

/// The p-th percentile (0...1) of `values`, nearest rank.
func percentile(_ values: [Double], _ fraction: Double) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    return sorted[min(sorted.count - 1, max(0, Int((Double(sorted.count) * fraction).rounded(.up)) - 1))]
}

/// Live mode (issue 24 item 5) end to end against the real server and PostgreSQL: changes reach
/// the other devices by themselves, nothing is missed across dropped answers and a server restart,
/// cancellation stops every request, and failures back off as the rules say.
@Suite("LocifyClient live mode: long-poll, pushes as edits are made, reconnects, backoff", .serialized)
struct LiveSyncTests {
    /// Changes per device in the latency test: `LOCIFY_LIVE_CHANGES` (the benchmark runs hundreds).
    static var changesPerDevice: Int {
        ProcessInfo.processInfo.environment["LOCIFY_LIVE_CHANGES"].flatMap { Int($0) } ?? 8
    }

    @Test("devices in live mode see each other's changes without calling sync(); the time from sync() to the other stores is reported")
    func changesArriveByThemselves() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let stores = (0..<3).map { _ in ArrivalStore() }
        let engines = stores.map { SyncEngine(api: harness.api(), store: $0) }
        let category = try await engines[0].saveCategory(name: "Live")
        try await engines[0].sync()
        let tasks = engines.map { $0.live() }
        defer { for task in tasks { task.cancel() } }
        let seen = await until {
            let second = try await engines[1].category(id: category.id)
            let third = try await engines[2].category(id: category.id)
            return second != nil && third != nil
        }
        #expect(seen, "the category reached the other devices")

        var latencies: [Double] = []
        for round in 0..<Self.changesPerDevice {
            for (writer, engine) in engines.enumerated() {
                let name = "w\(writer)-\(round)"
                try await engine.saveLocation(LocationDraft(categoryID: category.id, name: name, latitude: 48, longitude: 2))
                let syncCalled = ContinuousClock.now
                try await engine.sync()
                for (reader, store) in stores.enumerated() where reader != writer {
                    let arrived = await until { store.arrival(of: name) != nil }
                    #expect(arrived, "\(name) reached device \(reader) without its calling sync()")
                    if let arrival = store.arrival(of: name) {
                        latencies.append(max(0, (arrival - syncCalled) / .milliseconds(1)))
                    }
                }
            }
        }
        #expect(latencies.count == 2 * 3 * Self.changesPerDevice)
        print(
            "live-sync latency, sync() on one device to another device's store: \(latencies.count) arrivals,"
                + String(format: " p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms", percentile(latencies, 0.5), percentile(latencies, 0.9), percentile(latencies, 0.99), latencies.max() ?? 0))
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
        var devices: [ServerView] = []
        for engine in engines { devices.append(try await ServerView.device(engine)) }
        let listings = try await ServerView.listings(harness.api()).comparable
        for (index, device) in devices.enumerated() {
            #expect(device == listings, "device \(index) equals the server:\n\(device.difference(from: listings))")
        }
    }

    @Test("devices in live mode edit concurrently over a failing network: they converge without a sync() and no write is lost")
    func liveSoak() async throws {
        let server = try TestServer.start(configure: { $0.maxPushChanges = 4 })
        defer { server.stop() }
        let harness = ClientHarness(server)
        let api = harness.api()
        let start = try await api.pull(since: nil)
        var devices: [Device] = []
        for index in 0..<3 {
            let device = await Device.make(harness, "live\(index)x", clockOffset: MultiDeviceSoakTests.clockOffsets[index], pullLimit: 7)
            FaultPlans.set(device: device.name, failureRate: 0.2, seed: 77 &+ UInt64(index))
            devices.append(device)
        }
        defer { for device in devices { device.done() } }
        PushObserver.observe(devices.map(\.name))
        let oracle = WriteOracle()
        var fast = LiveSyncSettings()
        fast.initialBackoff = .milliseconds(20)
        fast.maximumBackoff = .milliseconds(300)
        let tasks = devices.map { $0.engine.live(fast) }
        defer { for task in tasks { task.cancel() } }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, device) in devices.enumerated() {
                group.addTask {
                    var random = SeededGenerator(seed: 500 &+ UInt64(index))
                    for _ in 0..<25 {
                        do {
                            try await MultiDeviceSoakTests.randomEdit(device, oracle, &random)
                        } catch LocifyError.notFound(let error) where error.requestID == nil {
                            // Live mode's pull removed the record the edit picked: refused locally.
                        }
                        try await Task.sleep(for: .milliseconds(Int.random(in: 0..<40, using: &random)))
                    }
                }
            }
            try await group.waitForAll()
        }
        for device in devices { FaultPlans.set(device: device.name, failureRate: 0, seed: 0) }
        // No sync() from here: live mode alone brings every device to the server's state.
        let converged = await until(.seconds(120)) {
            try await Task.sleep(for: .milliseconds(200))
            for device in devices where try await !device.engine.pendingChanges().isEmpty { return false }
            let listings = try await ServerView.listings(api).comparable
            for device in devices where try await ServerView.device(device.engine) != listings { return false }
            return true
        }
        #expect(converged, "every device reached the server's state by itself")
        await stopLive(tasks, devices: devices.map(\.name), on: server.application)
        // A new account starts with its default categories (the first snapshot, one page).
        let initial = start.changes.compactMap { change -> RecordState? in
            if case .upsert(let record) = change { return record }
            return nil
        }
        #expect(!start.hasMore)
        let history = WriteHistoryOracle(initial: initial, PushObserver.take(devices.map(\.name)))
        try await expectConverged(devices, api, explain: { kind, id in history.history(kind, id) })
        let tally = try await MultiDeviceSoakTests.expectNoWriteLost(oracle, history, api, since: start.cursor)
        let failures = devices.map { FaultPlans.counts(device: $0.name).failures }.reduce(0, +)
        #expect(failures > 0, "the network failed some requests")
        print("live soak: writes \(oracle.all.values.map(\.count).reduce(0, +)) failures \(failures) \(tally)")
    }

    @Test("an edit made while a long-poll is open is pushed at once, without waiting for the poll to end")
    func editsArePushedWhileThePollIsOpen() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let engine = SyncEngine(api: LocifyAPIClient(baseURL: harness.baseURL, timeout: 120, token: harness.tokens), store: InMemoryStore())
        var settings = LiveSyncSettings()
        settings.longestWait = .seconds(60)
        let task = engine.live(settings)
        defer { task.cancel() }
        #expect(await until { server.application.server.waitingRequests == 1 }, "the long-poll is open")
        let category = try await engine.saveCategory(name: "Pushed while waiting")
        // The poll waits 60 s: a push that waited for it would come after that.
        #expect(await until(.seconds(40)) { (try? await harness.api().category(id: category.id)) != nil })
        #expect(await until(.seconds(40)) { try await engine.pendingChanges().isEmpty })
        task.cancel()
        await task.value
    }

    @Test("answers dropped on the way and a server restart while the device waits: it reconnects and misses no write")
    func reconnectsAndMissesNothing() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        // The writer talks to one instance, the follower waits on another, which restarts.
        let writerInstance = try server.startApplication()
        defer { writerInstance.shutdown() }
        let followerInstance = try server.startApplication()
        let followerPort = followerInstance.port
        var restarted: Application?
        // safe because: the literal is a valid URL
        let writerAPI = LocifyAPIClient(baseURL: URL(string: "http://127.0.0.1:\(writerInstance.port)")!, timeout: 20, token: harness.tokens)
        let writer = SyncEngine(api: writerAPI, store: InMemoryStore())
        let followerStore = ArrivalStore()
        let name = "b\(UInt32.random(in: 0...UInt32.max))"
        // A quarter of the follower's requests fail, half of those after the server answered.
        FaultPlans.set(device: name, failureRate: 0.25, seed: 24, kinds: [.failBeforeSending, .dropAnswer, .timeoutAfterApplying])
        defer { FaultPlans.remove(device: name) }
        // safe because: device names are letters and digits
        let followerURL = URL(string: "http://\(name).fault.test:\(followerPort)")!
        let follower = SyncEngine(
            api: LocifyAPIClient(baseURL: followerURL, session: FaultInjectingURLProtocol.session(), timeout: 20, token: harness.tokens),
            store: followerStore)
        let events = await EventLog(follower)
        defer { events.stop() }
        var fast = LiveSyncSettings()
        fast.initialBackoff = .milliseconds(50)
        fast.maximumBackoff = .milliseconds(400)
        let tasks = [writer.live(fast), follower.live(fast)]
        defer { for task in tasks { task.cancel() } }

        let category = try await writer.saveCategory(name: "Followed")
        var written: [String] = []
        for index in 0..<60 {
            if index == 20 {
                // The follower's instance goes away (its waiting pull is answered at once) and
                // comes back on the same port a moment later, while the writer goes on.
                try await offThePool { followerInstance.shutdown() }
            }
            if index == 35 {
                restarted = try server.startApplication(configure: { $0.port = followerPort })
            }
            let location = "l\(index)"
            try await writer.saveLocation(LocationDraft(categoryID: category.id, name: location, latitude: 1, longitude: 1))
            written.append(location)
            if index % 7 == 0 { _ = try? await writer.sync() }
            try await Task.sleep(for: .milliseconds(20))
        }
        defer { restarted?.shutdown() }
        #expect(await until { try await writer.pendingChanges().isEmpty }, "the writer pushed everything")
        let missing = { written.filter { followerStore.arrival(of: $0) == nil } }
        #expect(await until(.seconds(90)) { missing().isEmpty }, "every write reached the follower; missing: \(missing())")
        #expect(FaultPlans.counts(device: name).failures > 0, "the network failed some of the follower's requests")
        #expect(events.all.contains { if case .liveRetrying = $0 { true } else { false } }, "the follower backed off and reconnected")
        let reconnected = await until { restarted?.server.waitingRequests == 1 }
        #expect(reconnected, "the follower's long-poll waits on the restarted instance")
        if let restarted { await stopLive([tasks[1]], devices: [name], on: restarted) }
        tasks[0].cancel()
        await tasks[0].value
        let listings = try await ServerView.listings(harness.api()).comparable
        let local = try await ServerView.device(follower)
        #expect(local == listings, "the follower equals the server:\n\(local.difference(from: listings))")
    }

    @Test("cancelling live mode ends the open long-poll and every further request")
    func cancellationStopsEverything() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let counter = TokenCounter()
        let api = LocifyAPIClient(baseURL: harness.baseURL, timeout: 20, token: counter.provider(harness))
        let engine = SyncEngine(api: api, store: InMemoryStore())
        let task = engine.live()
        #expect(await until { server.application.server.waitingRequests == 1 }, "the long-poll is open")
        task.cancel()
        await task.value
        #expect(await until(.seconds(30)) { server.application.server.waitingRequests == 0 }, "the server saw the request end")
        let requests = counter.value
        // Another device's change would answer a poll that was still open; and edits no longer push.
        let other = harness.api()
        _ = try await other.createCategory(CategoryWrite(id: UUID(), name: "After", updatedAt: Date()))
        try await engine.saveCategory(name: "Local only")
        try await Task.sleep(for: .milliseconds(500))
        #expect(counter.value == requests, "no request after cancellation")
        #expect(try await engine.pendingChanges().count == 1)
        #expect(try await engine.categories().allSatisfy { $0.name != "After" })
    }

    /// Pauses recorded by the injected sleeper; it stops live mode after `limit` of them. `during`
    /// runs in each pause (given its number, from 1), in place of sleeping.
    final class PauseRecorder: Sendable {
        let pauses = Mutex<[Duration]>([])
        let limit: Int
        let during: @Sendable (Int) async throws -> Void

        init(limit: Int, during: @escaping @Sendable (Int) async throws -> Void = { _ in }) {
            self.limit = limit
            self.during = during
        }

        var sleep: @Sendable (Duration) async throws -> Void {
            { [self] pause in
                let count = pauses.withLock { pauses in
                    pauses.append(pause)
                    return pauses.count
                }
                if count >= limit { throw CancellationError() }
                try await during(count)
            }
        }

        var milliseconds: [Int64] { pauses.withLock { $0.map { $0 / .milliseconds(1) } }.map { Int64($0.rounded()) } }
    }

    @Test(
        "failures back off exponentially with full jitter, capped, never sooner than Retry-After (no real sleep)",
        arguments: [(1.0, [500, 1000, 2000, 11000, 7000, 4000, 4000]), (0.0, [0, 0, 0, 7000, 3000, 0, 0])])
    func backoff(random: Double, expected: [Int64]) async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let name = "d\(UInt32.random(in: 0...UInt32.max))"
        FaultPlans.set(device: name, failureRate: 1, seed: 1, kinds: [.failBeforeSending])
        FaultPlans.script(
            device: name,
            [
                .failBeforeSending, .timeoutBeforeSending, .failBeforeSending, .answerBeforeSending(status: 503, retryAfter: 7),
                .answerBeforeSending(status: 429, retryAfter: 3),
            ])
        defer { FaultPlans.remove(device: name) }
        let engine = SyncEngine(api: harness.faultyAPI(device: name), store: InMemoryStore())
        await engine.setMaxRetryAfter(0)  // the engine's own short waits would sleep for real
        let events = await EventLog(engine)
        defer { events.stop() }
        let recorder = PauseRecorder(limit: expected.count)
        var settings = LiveSyncSettings()
        settings.initialBackoff = .milliseconds(500)
        settings.maximumBackoff = .seconds(4)
        settings.sleep = recorder.sleep
        settings.random = { random }
        await engine.runLive(settings)  // ends when the recorder stops it
        #expect(recorder.milliseconds == expected)
        #expect(FaultPlans.counts(device: name).requests == expected.count, "one request per attempt")
        let reported = await until(.seconds(5)) {
            events.all.filter { if case .liveRetrying = $0 { true } else { false } }.count == expected.count
        }
        #expect(reported, "each pause is reported as .liveRetrying")
    }

    @Test("long-polls answered at once with nothing (an instance that does not hold them) are sent again only after growing pauses")
    func earlyEmptyAnswersArePaced() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let first = try server.startApplication()
        let port = first.port
        // safe because: the literal is a valid URL
        let api = LocifyAPIClient(baseURL: URL(string: "http://127.0.0.1:\(port)")!, timeout: 20, token: harness.tokens)
        let engine = SyncEngine(api: api, store: InMemoryStore())
        let events = await EventLog(engine)
        defer { events.stop() }
        // The first pause (after the shutdown's answer) lasts until the replacement listens.
        let replaced = Atomic<Bool>(false)
        let recorder = PauseRecorder(limit: 4) { count in
            while count == 1 && !replaced.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(10)) }
        }
        var settings = LiveSyncSettings()
        settings.sleep = recorder.sleep
        settings.random = { 1 }
        let task = engine.live(settings)
        defer { task.cancel() }
        #expect(await until { first.server.waitingRequests == 1 }, "the long-poll is open")
        // A rolling deploy replaces the instance with one that does not hold pulls (max wait 0),
        // while the device still has the first one's /v1/info.
        try await offThePool { first.shutdown() }
        let second = try server.startApplication(configure: {
            $0.port = port
            $0.maxWaitSeconds = 0
        })
        defer { second.shutdown() }
        replaced.store(true, ordering: .releasing)
        #expect(await until(.seconds(30)) { recorder.milliseconds.count == 4 })
        task.cancel()
        await task.value
        #expect(recorder.milliseconds == [500, 1000, 2000, 4000], "each empty answer that came at once is followed by a longer pause")
        // The shutdown ends the first poll with an answer or, on a loaded machine, by closing it.
        let failures = events.all.filter { if case .liveRetrying = $0 { true } else { false } }
        #expect(failures.count <= 1, "no request to the replacement failed: \(failures)")
    }

    @Test("a server without long-poll (max_wait_seconds 0) is polled every poll interval")
    func pollsWithoutLongPoll() async throws {
        let server = try TestServer.start(configure: { $0.maxWaitSeconds = 0 })
        defer { server.stop() }
        let harness = ClientHarness(server)
        let engine = SyncEngine(api: harness.api(), store: InMemoryStore())
        let recorder = PauseRecorder(limit: 3)
        var settings = LiveSyncSettings()
        settings.pollInterval = .seconds(9)
        settings.sleep = recorder.sleep
        let other = harness.api()
        let created = try await other.createCategory(CategoryWrite(id: UUID(), name: "Polled", updatedAt: Date()))
        await engine.runLive(settings)
        #expect(recorder.milliseconds == [9000, 9000, 9000])
        #expect(try await engine.category(id: created.id) != nil)
        #expect(server.application.server.waitingRequests == 0)
    }
}
