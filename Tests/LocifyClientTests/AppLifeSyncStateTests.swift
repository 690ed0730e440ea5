import Foundation
import LocifyClient
import Synchronization
import Testing
import TestSupport
import TestSupportServer

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Live settings that never hold a request open between syncs (a server polled once an hour):
/// a test can stop the engine with no request in flight on the fault-injecting network.
private func quietLiveSettings() -> LiveSyncSettings {
    var settings = LiveSyncSettings()
    settings.longestWait = .zero
    settings.pollInterval = .seconds(3600)
    settings.initialBackoff = .milliseconds(10)
    settings.maximumBackoff = .milliseconds(100)
    return settings
}

/// A token provider that throws `error` on its first call, then gives `harness`'s tokens.
private func failingOnce(_ harness: ClientHarness, with error: any Error & Sendable) -> LocifyAPIClient.TokenProvider {
    let failed = Atomic<Bool>(false)
    let tokens = harness.tokens
    return { force in
        if !failed.exchange(true, ordering: .relaxed) { throw error }
        return try await tokens(force)
    }
}

/// Issue 34 items 4 and 5: sync never stops for good after a cancellation the app did not ask
/// for, and a token refresh that cannot reach the network is offline, not failed.
@Suite("LocifyClient in an app's real life: system cancellations and offline token refreshes (issue 34)")
struct AppLifeSyncStateTests {
    // MARK: Item 4

    @Test("a request the system cancels (-999) is retried: live mode and the schedule go on, and a later edit is pushed")
    func systemCancelledRequestKeepsLiveModeGoing() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let device = "cancel\(UInt32.random(in: 0...UInt32.max))"
        FaultPlans.script(device: device, [.systemCancelled])
        defer { FaultPlans.remove(device: device) }
        let engine = SyncEngine(api: harness.faultyAPI(device: device), store: InMemoryStore())
        var schedule = SyncSchedule()
        schedule.liveInForeground = quietLiveSettings()
        schedule.initialBackoff = .milliseconds(10)
        let scheduler = await engine.start(schedule)
        #expect(await until(.seconds(60)) { FaultPlans.counts(device: device).requests >= 2 }, "the cancelled request was followed by others")
        let category = try await engine.saveCategory(name: "After the cancel")
        let pushed = await until(.seconds(60)) { (try? await harness.api().category(id: category.id)) != nil }
        #expect(pushed, "an edit made after the system cancelled a request reaches the server")
        #expect(await scheduler.isLive)
        #expect(
            await until(.seconds(60)) {
                let status = await engine.status
                return status.activity == .idle && status.pendingChanges == 0
            })
        await engine.stop()
    }

    @Test("live mode goes on after a cancellation it did not ask for (the token closure's CancellationError)")
    func foreignCancellationDoesNotEndLiveMode() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let api = LocifyAPIClient(baseURL: harness.baseURL, timeout: 20, token: failingOnce(harness, with: CancellationError()))
        let engine = SyncEngine(api: api, store: InMemoryStore())
        let live = engine.live(quietLiveSettings())
        let category = try await engine.saveCategory(name: "Pushed by live mode")
        let pushed = await until(.seconds(60)) { (try? await harness.api().category(id: category.id)) != nil }
        #expect(pushed, "live mode retried instead of ending")
        live.cancel()
        await live.value
    }

    @Test("the scheduler knows when live mode ended by itself: not live, a retry is planned, and live mode starts again")
    func liveModeEndingByItselfIsNoticed() async throws {
        let lives = Mutex(0)
        let rig = ScheduleRig(
            appState: .foreground,
            live: { _ in
                let run = lives.withLock {
                    $0 += 1
                    return $0
                }
                if run == 1 { return }  // the first run ends by itself (e.g. another account's token)
                while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
            },
            configure: { $0.liveInForeground = LiveSyncSettings() })
        await rig.scheduler.start()
        #expect(await until(.seconds(60)) { await !rig.scheduler.isLive && lives.withLock { $0 } == 1 })
        #expect(await rig.planned(.retry, in: .seconds(1)), "a retry after the backoff")
        try await rig.advanceToNextAttempt()
        #expect(await until(.seconds(60)) { rig.sync.calls == 1 && lives.withLock { $0 } == 2 })
        #expect(await rig.scheduler.isLive)
        await rig.scheduler.stop()
    }

    @Test("a sync cancelled by something other than stop() is retried with the backoff")
    func foreignlyCancelledSyncIsRetried() async throws {
        let rig = ScheduleRig()
        rig.sync.answer(.failure(.cancelled))
        await rig.scheduler.start()
        #expect(await rig.settled(calls: 1))
        #expect(await rig.planned(.retry, in: .seconds(1)))
        try await rig.advanceToNextAttempt()
        #expect(await rig.settled(calls: 2))
        #expect(try #require(await rig.scheduler.lastResult).get() == SyncReport())
        await rig.scheduler.stop()
    }

    // MARK: Item 5

    @Test(
        "a token refresh that cannot reach the network is offline (transient), whether it throws a URLError or Firebase's wrapped one",
        arguments: [
            URLError(.notConnectedToInternet) as NSError,
            NSError(
                domain: "FIRAuthErrorDomain", code: 17020,
                userInfo: [NSLocalizedDescriptionKey: "Network error", NSUnderlyingErrorKey: URLError(.timedOut) as NSError]),
            NSError(domain: "FIRAuthErrorDomain", code: 17020, userInfo: [NSLocalizedDescriptionKey: "Network error"]),
        ])
    func offlineTokenRefresh(thrown: NSError) async throws {
        let engine = SyncEngine(api: unreachableAPI(token: { _ in throw thrown }), store: InMemoryStore())
        _ = try await engine.saveCategory(name: "Made offline")
        do {
            try await engine.sync()
            Issue.record("a sync without a token cannot succeed")
        } catch let error as LocifyError {
            #expect(error.isTransient, "\(error)")
            guard case .network(let failure) = error else {
                Issue.record("expected a network failure, got \(error)")
                return
            }
            if thrown.domain == NSURLErrorDomain { #expect(failure.code == .notConnectedToInternet) }
            if thrown.userInfo[NSUnderlyingErrorKey] != nil { #expect(failure.code == .timedOut) }
        }
        #expect(await engine.status.activity == .offline)
        #expect(await engine.status.pendingChanges == 1)
    }

    @Test("a token closure that fails for another reason is still tokenUnavailable (not transient)")
    func signedOutTokenIsNotOffline() async throws {
        struct SignedOut: Error {}
        let engine = SyncEngine(api: unreachableAPI(token: { _ in throw SignedOut() }), store: InMemoryStore())
        await #expect {
            try await engine.sync()
        } throws: { error in
            guard let error = error as? LocifyError, case .tokenUnavailable = error else { return false }
            return !error.isTransient
        }
    }
}
