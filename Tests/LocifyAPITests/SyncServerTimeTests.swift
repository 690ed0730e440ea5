import Foundation
import JSON
import Locify
import LocifyRules
import Primitives
import Testing
import TestSupport
import TestSupportServer

/// The `server_time` of the sync answers (issue 34 item 8): devices learn their clock's offset
/// from it, so it must be the server's clock, to the millisecond, in every push and pull answer.
@Suite("Sync answers carry the server's clock (server_time, issue 34 item 8)")
struct SyncServerTimeTests {
    @Test("push and pull answers carry server_time: the server's clock, RFC 3339 UTC with milliseconds")
    func serverTimeOnTheServersClock() throws {
        let frozen = try FrozenClockServer()
        defer { frozen.stop() }
        let client = try SyncTestClient(frozen.server)
        let moved = FrozenClockServer.start.adding(milliseconds: 1_234)
        frozen.clock.set(moved)
        let push = try client.push([SyncChange.change("category", "create", SyncChange.category(UUID(), name: "Cafés", at: 0))])
        #expect(push.status == 200)
        #expect(push.object["server_time"]?.stringValue == "2025-06-01T00:00:01.234Z")
        let later = moved.adding(milliseconds: 60_007)
        frozen.clock.set(later)
        let snapshot = try client.pull(limit: "10")
        #expect(snapshot.object["server_time"]?.stringValue == later.rfc3339)
        let cursor = try #require(snapshot.object["cursor"]?.stringValue)
        #expect(try client.pull(since: cursor).object["server_time"]?.stringValue == "2025-06-01T00:01:01.241Z")
    }

    @Test("on the real clock, server_time lies between the request's sending and the answer's arrival")
    func serverTimeOnTheRealClock() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let client = try SyncTestClient(server)
        let before = WallClock.system.now()
        let answer = try client.pull()
        let after = WallClock.system.now()
        let text = try #require(answer.object["server_time"]?.stringValue)
        let time = try #require(Timestamp(rfc3339: text))
        #expect(time >= before && time <= after, "\(text)")
        #expect(text.wholeMatch(of: /[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z/) != nil)
    }
}
