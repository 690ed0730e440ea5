import Foundation
import JSON
import Locify
import LocifyRules
import Primitives
import Testing
import TestSupport
import TestSupportServer

/// A server whose record clock stands still at `clock.now` until the test moves it.
struct FrozenClockServer {
    static let start = Timestamp(milliseconds: 1_748_736_000_000)  // 2025-06-01T00:00:00.000Z

    let clock = ManualClock(FrozenClockServer.start)
    let server: TestServer

    init() throws {
        let clock = self.clock
        server = try TestServer.start(.inProcess, dependencies: { $0.wallClock = clock.wallClock })
    }

    func stop() { server.stop() }
}

@Suite("Timestamps over HTTP (openapi.yaml)")
struct CategoriesAndLocationsTimestampTests {
    @Test("an updated_at in the future is clamped to the server clock", arguments: Resource.allCases)
    func futureUpdatedAtClamped(resource: Resource) throws {
        let frozen = try FrozenClockServer()
        defer { frozen.stop() }
        let fixture = try ResourceFixture(resource, on: frozen.server)
        let id = newID()
        let now = FrozenClockServer.start.rfc3339
        let created = try fixture.post(fixture.body(id: id, updatedAt: "2100-01-01T00:00:00.000Z"))
        expectRecord(created, 201, fixture.record(id: id, createdAt: now, updatedAt: now))
        // A replay of the same future write compares equal to the clamped time.
        expectRecord(try fixture.post(fixture.body(id: id, updatedAt: "2100-01-01T00:00:00.000Z")), 200, created.object)
        frozen.clock.set(FrozenClockServer.start.adding(milliseconds: 60_000))
        let later = FrozenClockServer.start.adding(milliseconds: 60_000).rfc3339
        expectRecord(
            try fixture.put(id: id, fixture.body(id: nil, name: "Later", updatedAt: "2999-12-31T23:59:59.999+14:00")), 200,
            fixture.record(id: id, name: "Later", version: 2, createdAt: now, updatedAt: later))
        expectNoContent(try fixture.delete(id: id, query: "?updated_at=3000-01-01T00:00:00Z"))
        expectConflict(try fixture.post(fixture.body(id: id, updatedAt: later)), data: tombstoneJSON(id: id, deletedAt: later))
    }

    @Test("a future updated_at on the real clock lands between the request's start and end")
    func futureUpdatedAtOnRealClock() throws {
        let fixture = try ResourceFixture(.locations)
        let before = WallClock.system.now()
        let response = try fixture.post(fixture.body(id: newID(), updatedAt: "2100-01-01T00:00:00Z"))
        let after = WallClock.system.now()
        let stored = try #require(timestamp(response.object, "updated_at"))
        #expect(response.status == 201 && stored >= before && stored <= after)
    }

    @Test("timestamps are truncated to milliseconds, so an echoed timestamp replays", arguments: Resource.allCases)
    func millisecondTruncation(resource: Resource) throws {
        let fixture = try ResourceFixture(resource)
        let id = newID()
        let created = try fixture.post(
            fixture.body(id: id, updatedAt: "2025-03-01T12:00:00.123999Z", ["created_at": "2025-03-01T11:00:00.000999999Z"]))
        expectRecord(created, 201, fixture.record(id: id, createdAt: "2025-03-01T11:00:00.000Z", updatedAt: "2025-03-01T12:00:00.123Z"))
        for echo in ["2025-03-01T12:00:00.123Z", "2025-03-01T12:00:00.1239Z", "2025-03-01T12:00:00.123000001Z"] {
            expectRecord(try fixture.post(fixture.body(id: id, updatedAt: echo)), 200, created.object)
        }
        expectConflict(try fixture.post(fixture.body(id: id, updatedAt: "2025-03-01T12:00:00.122999Z")), data: created.object)
        #expect(try fixture.storedVersion(id) == 1)
    }

    @Test("any RFC 3339 form is accepted (fraction or not, any offset, lower-case t and z); output is always UTC with milliseconds")
    func anyRFC3339Form() throws {
        let fixture = try ResourceFixture(.categories)
        let forms: [(String, String)] = [
            ("2025-03-01T12:00:00Z", "2025-03-01T12:00:00.000Z"),
            ("2025-03-01T12:00:00.5Z", "2025-03-01T12:00:00.500Z"),
            ("2025-03-01T12:00:00.12Z", "2025-03-01T12:00:00.120Z"),
            ("2025-03-01T17:30:00+05:30", "2025-03-01T12:00:00.000Z"),
            ("2025-03-01T04:00:00.250-08:00", "2025-03-01T12:00:00.250Z"),
            ("2025-03-02T00:00:00+12:00", "2025-03-01T12:00:00.000Z"),
            ("2025-02-28T23:59:00-12:01", "2025-03-01T12:00:00.000Z"),
            ("2025-03-01t12:00:00z", "2025-03-01T12:00:00.000Z"),
            ("2025-03-01T12:00:00.999999999-00:00", "2025-03-01T12:00:00.999Z"),
            ("2024-02-29T23:59:59.999+00:00", "2024-02-29T23:59:59.999Z"),
            ("1999-12-31T23:00:00-01:00", "2000-01-01T00:00:00.000Z"),
        ]
        for (sent, stored) in forms {
            let id = newID()
            let response = try fixture.post(fixture.body(id: id, updatedAt: sent, ["created_at": .string(sent)]))
            expectRecord(response, 201, fixture.record(id: id, createdAt: stored, updatedAt: stored))
        }
    }

    @Test("timestamps long before 1970 are accepted and round-trip exactly; any later write beats them", arguments: Resource.allCases)
    func farPastTimestamps(resource: Resource) throws {
        let fixture = try ResourceFixture(resource)
        let forms: [(String, String)] = [
            ("1969-12-31T23:59:59.999Z", "1969-12-31T23:59:59.999Z"),
            ("1900-02-28T12:00:00.5-03:00", "1900-02-28T15:00:00.500Z"),
            ("0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000Z"),
            ("0000-03-01T00:00:00.001Z", "0000-03-01T00:00:00.001Z"),
        ]
        for (sent, stored) in forms {
            let id = newID()
            let created = try fixture.post(fixture.body(id: id, updatedAt: sent, ["created_at": .string(sent)]))
            expectRecord(created, 201, fixture.record(id: id, createdAt: stored, updatedAt: stored))
            expectRecord(try fixture.post(fixture.body(id: id, updatedAt: stored)), 200, created.object)
            expectRecord(try fixture.get(id: id), 200, created.object)
            let later = try fixture.put(id: id, fixture.body(id: nil, name: "Later", updatedAt: "1970-01-01T00:00:00Z"))
            #expect(later.status == 200, "\(sent): \(later.text)")
        }
    }

    @Test("every timestamp the API returns has the form YYYY-MM-DDTHH:MM:SS.sssZ")
    func outputForm() throws {
        let fixture = try ResourceFixture(.locations)
        for minute in 0..<3 { try fixture.create(newID(), minute: minute) }
        #expect(try fixture.post(fixture.body(id: newID(), updatedAt: nil)).status == 201)
        var records: [JSONObject] = []
        records += try fixture.user.get("/v1/categories").data.compactMap(\.objectValue)
        records += try fixture.user.get("/v1/locations").data.compactMap(\.objectValue)
        #expect(records.count == 9)
        for record in records {
            #expect(isAPITimestamp(record["created_at"]?.stringValue), "\(record)")
            #expect(isAPITimestamp(record["updated_at"]?.stringValue), "\(record)")
        }
    }

    @Test("a write without updated_at is stamped max(now, stored updated_at + 1 ms) and never conflicts", arguments: Resource.allCases)
    func unstampedWrites(resource: Resource) throws {
        let frozen = try FrozenClockServer()
        defer { frozen.stop() }
        let fixture = try ResourceFixture(resource, on: frozen.server)
        let start = FrozenClockServer.start
        func at(_ milliseconds: Int64) -> String { start.adding(milliseconds: milliseconds).rfc3339 }
        let id = newID()
        expectRecord(try fixture.post(fixture.body(id: id, name: "A", updatedAt: nil)), 201, fixture.record(id: id, name: "A", createdAt: at(0), updatedAt: at(0)))
        // The clock has not moved: each write lands 1 ms after the stored one.
        expectRecord(
            try fixture.put(id: id, fixture.body(id: nil, name: "B", updatedAt: nil)), 200,
            fixture.record(id: id, name: "B", version: 2, createdAt: at(0), updatedAt: at(1)))
        expectRecord(
            try fixture.post(fixture.body(id: id, name: "C", updatedAt: nil)), 200,
            fixture.record(id: id, name: "C", version: 3, createdAt: at(0), updatedAt: at(2)))
        expectRecord(
            try fixture.put(fixture.body(id: id, name: "C", updatedAt: nil)), 200,
            fixture.record(id: id, name: "C", version: 4, createdAt: at(0), updatedAt: at(3)))
        expectNoContent(try fixture.delete(id: id))
        expectConflict(try fixture.post(fixture.body(id: id, updatedAt: at(4))), data: tombstoneJSON(id: id, deletedAt: at(4)))
        expectRecord(
            try fixture.post(fixture.body(id: id, name: "D", updatedAt: nil)), 200,
            fixture.record(id: id, name: "D", version: 6, createdAt: at(0), updatedAt: at(5)))
        // Once the clock is past the stored time, the clock wins.
        frozen.clock.set(start.adding(milliseconds: 3_600_000))
        expectRecord(
            try fixture.put(id: id, fixture.body(id: nil, name: "E", updatedAt: nil)), 200,
            fixture.record(id: id, name: "E", version: 7, createdAt: at(0), updatedAt: at(3_600_000)))
        // When the clock steps back behind the stored time, the write still lands 1 ms after it.
        frozen.clock.set(start)
        expectRecord(
            try fixture.put(id: id, fixture.body(id: nil, name: "F", updatedAt: nil)), 200,
            fixture.record(id: id, name: "F", version: 8, createdAt: at(0), updatedAt: at(3_600_001)))
        expectNoContent(try fixture.delete(id: id, query: ""))
        expectConflict(try fixture.put(fixture.body(id: id, updatedAt: at(3_600_002))), data: tombstoneJSON(id: id, deletedAt: at(3_600_002)))
    }

    @Test("created_at on create is clamped to the server clock and kept when in the past; it is ignored on every later write", arguments: Resource.allCases)
    func createdAtRules(resource: Resource) throws {
        let frozen = try FrozenClockServer()
        defer { frozen.stop() }
        let fixture = try ResourceFixture(resource, on: frozen.server)
        let now = FrozenClockServer.start.rfc3339
        let future = newID()
        expectRecord(
            try fixture.post(fixture.body(id: future, updatedAt: clientTime(0), ["created_at": "2100-01-01T00:00:00Z"])), 201,
            fixture.record(id: future, createdAt: now, updatedAt: clientTime(0)))
        let id = newID()
        let created = try fixture.post(fixture.body(id: id, updatedAt: clientTime(0), ["created_at": .string(clientTime(-60))]))
        expectRecord(created, 201, fixture.record(id: id, createdAt: clientTime(-60), updatedAt: clientTime(0)))
        expectRecord(
            try fixture.put(id: id, fixture.body(id: nil, name: "U1", updatedAt: clientTime(1), ["created_at": .string(clientTime(-90))])),
            200, fixture.record(id: id, name: "U1", version: 2, createdAt: clientTime(-60), updatedAt: clientTime(1)))
        expectRecord(
            try fixture.post(fixture.body(id: id, name: "U2", updatedAt: clientTime(2), ["created_at": .string(clientTime(1))])), 200,
            fixture.record(id: id, name: "U2", version: 3, createdAt: clientTime(-60), updatedAt: clientTime(2)))
        expectNoContent(try fixture.delete(id: id, query: "?updated_at=\(clientTime(3))"))
        expectRecord(
            try fixture.post(fixture.body(id: id, name: "U3", updatedAt: clientTime(4), ["created_at": .string(clientTime(4))])), 200,
            fixture.record(id: id, name: "U3", version: 5, createdAt: clientTime(-60), updatedAt: clientTime(4)))
    }

    @Test("default categories carry 1970-01-01T00:00:00.000Z, so any device edit of one wins, even as a user's first request")
    func defaultCategoriesAtEpoch() throws {
        let epoch = "1970-01-01T00:00:00.000Z"
        let user = try APIUser.fresh()
        let cafe = defaultCategories[1].id
        // The user's very first request: a device that created "Cafe" offline pushes it.
        let pushed = try user.post("/v1/categories", categoryBody(id: cafe.uppercased(), name: "Cafe", ["updated_at": .string(clientTime(0))]))
        expectRecord(pushed, 200, categoryJSON(id: cafe, user: user, name: "Cafe", isDefault: true, version: 2, createdAt: epoch, updatedAt: clientTime(0)))
        let list = try user.get("/v1/categories")
        #expect(list.meta["total_count"] == 4)
        for (name, id) in defaultCategories where id != cafe {
            let record = list.data.compactMap(\.objectValue).first { $0["id"]?.stringValue == id }
            #expect(record == categoryJSON(id: id, user: user, name: name, isDefault: true, createdAt: epoch, updatedAt: epoch))
        }
        let favorites = defaultCategories[3].id
        let stored = categoryJSON(id: favorites, user: user, name: "Favorites", isDefault: true, createdAt: epoch, updatedAt: epoch)
        // A replay of the server's own copy is idempotent; different content at the same instant loses.
        expectRecord(try user.post("/v1/categories", categoryBody(id: favorites, name: "Favorites", ["updated_at": .string(epoch)])), 200, stored)
        expectConflict(try user.post("/v1/categories", categoryBody(id: favorites, name: "Favs", ["updated_at": .string(epoch)])), data: stored)
        // One millisecond later is enough to win.
        expectRecord(
            try user.put("/v1/categories/\(favorites)", categoryBody(id: nil, name: "Favs", ["updated_at": "1970-01-01T00:00:00.001Z"])), 200,
            categoryJSON(id: favorites, user: user, name: "Favs", isDefault: true, version: 2, createdAt: epoch, updatedAt: "1970-01-01T00:00:00.001Z"))
    }
}
