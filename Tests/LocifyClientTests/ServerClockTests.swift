import Foundation
import Testing
import TestSupport
import TestSupportServer

@testable import LocifyClient

/// Issue 34 item 8: edits are stamped with the device's clock corrected by its offset from the
/// server's, learnt from the `server_time` of every sync answer and kept across launches.
@Suite("LocifyClient stamps edits on the server's clock (issue 34 item 8)")
struct ServerClockTests {
    @Test("a device 10 minutes behind makes a newer edit that wins against an older edit of an on-time device")
    func slowDeviceNewerEditWins() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let onTime = SyncEngine(api: harness.api(), store: InMemoryStore())
        let slow = SyncEngine(api: harness.api(), store: InMemoryStore(), clock: offsetClock(-600))
        let category = try await onTime.saveCategory(name: "Cafés")
        try await onTime.sync()
        // The slow device learns its offset from the answers, short by at most a round trip.
        let learning = try await timed { try await slow.sync() }
        try await onTime.saveCategory(id: category.id, name: "The older edit")
        try await onTime.sync()
        // The slow device has not pulled the on-time device's edit: the two are concurrent, and
        // the slow device's is made later, by more than its offset can be short (a round trip
        // takes seconds on a loaded machine under a sanitizer).
        try await Task.sleep(for: learning + .seconds(2))
        try await slow.saveCategory(id: category.id, name: "The newer edit")
        let report = try await slow.sync()
        #expect(report.conflicts == 0, "the newer edit wins")
        #expect(try await harness.api().category(id: category.id).name == "The newer edit")
        try await onTime.sync()
        #expect(try await onTime.category(id: category.id)?.name == "The newer edit")
    }

    @Test("the offset is learnt from the sync answers, kept across a relaunch, and stamps edits made before the next sync")
    func offsetLearntAndKept() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let file = TemporaryStoreFile()
        defer { file.remove() }
        let slow = SyncEngine(api: harness.api(), store: try file.open(), clock: offsetClock(-600))
        #expect(await slow.serverClockOffset == .zero, "nothing learnt before the first answer")
        let learning = try await timed { try await slow.sync() }
        let learnt = await slow.serverClockOffset
        // A lower bound: short of the 600 s by at most the round trip of an answer of that sync.
        #expect(learnt > .seconds(600) - learning - .milliseconds(100) && learnt < .seconds(600) + .milliseconds(100), "\(learnt)")
        let relaunched = SyncEngine(api: harness.api(), store: try file.open(), clock: offsetClock(-600))
        let category = try await relaunched.saveCategory(name: "Made offline after a relaunch")
        let kept = await relaunched.serverClockOffset
        #expect(kept >= learnt - .milliseconds(100) && kept <= learnt + .milliseconds(100))
        let error = abs(category.updatedAt.timeIntervalSinceNow)
        #expect(error < 5 + Double(learning.components.seconds), "stamped on the server's clock, not 10 minutes behind")
    }

    @Test("an answer that took too long, or whose round trip is negative (the device's clock jumped back), teaches nothing")
    func absurdAnswersIgnored() {
        var offset = ServerClockOffset()
        let learnt = offset.learn(serverTime: at(600_000), sent: at(0), received: at(200))
        #expect(learnt && offset.milliseconds == 599_800)
        let jumpedBack = offset.learn(serverTime: at(10_000_000), sent: at(0), received: at(-1_000))
        #expect(!jumpedBack, "negative round trip")
        let stalled = offset.learn(serverTime: at(10_000_000), sent: at(0), received: at(31_000))
        #expect(!stalled, "a held long-poll's or a stalled answer")
        #expect(offset.milliseconds == 599_800)
    }

    @Test("a more precise answer refines the estimate, a less precise consistent one does not, one that excludes it replaces it")
    func estimateRefinement() {
        var offset = ServerClockOffset(persisted: 42)
        #expect(offset.milliseconds == 42 && !offset.isLearnt)
        offset.learn(serverTime: at(600_500), sent: at(0), received: at(1_000))  // a persisted estimate is replaced at once
        #expect(offset.milliseconds == 599_500 && offset.isLearnt)
        offset.learn(serverTime: at(600_070), sent: at(0), received: at(100))
        #expect(offset.milliseconds == 599_970, "more precise: refined")
        offset.learn(serverTime: at(601_000), sent: at(0), received: at(2_000))
        #expect(offset.milliseconds == 599_970, "less precise and consistent: kept")
        offset.learn(serverTime: at(500), sent: at(0), received: at(2_000))
        #expect(offset.milliseconds == -1_500, "the device's clock was set right: the old estimate is outside the new bounds")
    }

    /// A device time `milliseconds` after a fixed instant.
    private func at(_ milliseconds: Int64) -> Date { Date(locifyMilliseconds: 1_750_000_000_000 + milliseconds) }

    /// How long `work` took on the monotonic clock: what an offset learnt meanwhile can be short by.
    private func timed(_ work: () async throws -> Void) async rethrows -> Duration {
        let clock = ContinuousClock()
        let start = clock.now
        try await work()
        return clock.now - start
    }
}
