import Foundation
import JSON
import Locify
import LocifyRules
import Primitives
import Testing
import TestSupport

/// The account gate provisions a new account on the services' clock, the one tests inject, not
/// on the wall clock (issue 16 item 6).
@Suite("Account gate: the injected clock")
struct AccountGateTests {
    /// 2001-09-09T01:46:40Z: far from any wall-clock time a test could run at.
    static let fixed = Timestamp(milliseconds: 1_000_000_000_000)

    @Test("a read that provisions the account stamps created_at and updated_at with the injected clock")
    func readProvisions() throws {
        let db = try LocifyTestDatabase.create(clock: WallClock { .milliseconds(Self.fixed.milliseconds) })
        defer { db.drop() }
        let profile = try db.services.users.profile(TestConstants.newCaller())
        #expect(profile.createdAt == Self.fixed)
        #expect(profile.updatedAt == Self.fixed)
    }

    @Test("a write that provisions the account stamps it with the injected clock")
    func writeProvisions() throws {
        let db = try LocifyTestDatabase.create(clock: WallClock { .milliseconds(Self.fixed.milliseconds) })
        defer { db.drop() }
        let caller = TestConstants.newCaller()
        _ = try db.services.categories.create(caller, CategoryDraft(id: UUID(), name: "Food"))
        let profile = try db.services.users.profile(caller)
        #expect(profile.createdAt == Self.fixed)
        #expect(profile.updatedAt == Self.fixed)
    }

    @Test("a sync push and a sync pull that provision the account stamp it with the injected clock")
    func syncProvisions() throws {
        let db = try LocifyTestDatabase.create(clock: WallClock { .milliseconds(Self.fixed.milliseconds) })
        defer { db.drop() }
        let pusher = TestConstants.newCaller()
        _ = try db.services.sync.push(pusher, [])
        #expect(try db.services.users.profile(pusher).createdAt == Self.fixed)
        let puller = TestConstants.newCaller()
        _ = try db.services.sync.pull(puller, since: nil, limit: 10)
        #expect(try db.services.users.profile(puller).createdAt == Self.fixed)
    }
}
