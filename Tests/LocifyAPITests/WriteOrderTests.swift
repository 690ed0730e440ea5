import Foundation
import JSON
import Testing
import TestSupport
import TestSupportServer

// Last write wins does not depend on the order writes arrive in (issue 22, item 3; openapi.yaml,
// "Writes in any order"): for a set of writes to one user's records, every arrival order ends in
// the same state, and the change feed reports that state. Each order runs against the real server
// and PostgreSQL as a fresh user, starting from the same records.

/// One write of a scenario, as a device sends it: its own `updated_at` (minutes on the client
/// clock of `clientTime`) decides it, never when it arrives.
enum OrderedWrite: Sendable, CustomStringConvertible {
    /// `PUT` (push `update`) of a category.
    case updateCategory(String, name: String, at: Int)
    /// `POST` (push `create`) of a category: an upsert of an existing id.
    case createCategory(String, name: String, at: Int)
    /// `DELETE` of a category: cascade, or reassign to the second id.
    case deleteCategory(String, reassignTo: String?, at: Int)
    /// `PUT` (push `update`) of a location, into the category named.
    case updateLocation(String, category: String, name: String, at: Int)
    /// `POST` (push `create`) of a location, into the category named.
    case createLocation(String, category: String, name: String, at: Int)
    /// `DELETE` of a location.
    case deleteLocation(String, at: Int)

    var description: String {
        switch self {
        case .updateCategory(let id, let name, let at): "update category \(id) \"\(name)\" @\(at)"
        case .createCategory(let id, let name, let at): "create category \(id) \"\(name)\" @\(at)"
        case .deleteCategory(let id, let target, let at): "delete category \(id)\(target.map { " -> \($0)" } ?? " (cascade)") @\(at)"
        case .updateLocation(let id, let category, let name, let at): "update location \(id) in \(category) \"\(name)\" @\(at)"
        case .createLocation(let id, let category, let name, let at): "create location \(id) in \(category) \"\(name)\" @\(at)"
        case .deleteLocation(let id, let at): "delete location \(id) @\(at)"
        }
    }
}

/// A set of writes whose every arrival order must end in the same state.
struct WriteOrderScenario: Sendable, CustomTestStringConvertible {
    let name: String
    let writes: [OrderedWrite]
    /// Where the records written must end (`FeedState.summary`), when the scenario says.
    var expected: [String: String] = [:]

    var testDescription: String { name }
}

/// The records every order starts from (all written at minute 0): categories A, B and T;
/// locations L1 and L2 in A, L3 in B. Names stand for fixed ids, the same for every user.
enum WriteOrderFixture {
    static let ids: [String: String] = [
        "A": "0a000000-0000-4000-8000-00000000000a", "B": "0b000000-0000-4000-8000-00000000000b",
        "T": "0c000000-0000-4000-8000-00000000000c", "L1": "01000000-0000-4000-8000-000000000001",
        "L2": "02000000-0000-4000-8000-000000000002", "L3": "03000000-0000-4000-8000-000000000003",
        "L4": "04000000-0000-4000-8000-000000000004", "L5": "05000000-0000-4000-8000-000000000005",
    ]

    static func id(_ name: String) -> String { ids[name] ?? name }

    static let base: [OrderedWrite] = [
        .createCategory("A", name: "A", at: 0), .createCategory("B", name: "B", at: 0), .createCategory("T", name: "T", at: 0),
        .createLocation("L1", category: "A", name: "L1", at: 0), .createLocation("L2", category: "A", name: "L2", at: 0),
        .createLocation("L3", category: "B", name: "L3", at: 0),
    ]
}

/// Sends writes as one user, each either as its single-record call or as a one-change push.
struct OrderedWriter {
    let user: APIUser

    /// Sends `write`; the answer must be one the contract allows for a well-formed write.
    @discardableResult
    func send(_ write: OrderedWrite, push: Bool) throws -> Int {
        let (type, action, id, data, path, method, query) = request(for: write)
        let status: Int
        let text: String
        if push {
            let change: JSONValue = .object(["type": .string(type), "action": .string(action), "data": .object(data)])
            let response = try user.post("/v1/sync/push", .object(["changes": .array([change])]))
            let result = response.object["results"]?.arrayValue?.first?.objectValue
            status = response.status == 200 ? pushStatus(result) : response.status
            text = response.text
        } else {
            let response =
                method == "DELETE"
                ? try user.delete(path + "/" + id + query)
                : try user.send(method, method == "PUT" ? path + "/" + id : path, json: .object(data))
            status = response.status
            text = response.text
        }
        #expect([200, 201, 204, 404, 409].contains(status), "\(write) answered \(status): \(text)")
        return status
    }

    /// The status a push result stands for, in the single-record call's terms.
    private func pushStatus(_ result: JSONObject?) -> Int {
        switch result?["status"]?.stringValue {
        case "applied": return 200
        case "conflict": return 409
        default: return result?["error"]?.objectValue?["code"]?.stringValue == "E007" ? 404 : 400
        }
    }

    private func request(for write: OrderedWrite) -> (
        type: String, action: String, id: String, data: JSONObject, path: String, method: String, query: String
    ) {
        let id = WriteOrderFixture.id
        switch write {
        case .updateCategory(let record, let name, let at), .createCategory(let record, let name, let at):
            let data: JSONObject = ["id": .string(id(record)), "name": .string(name), "updated_at": .string(clientTime(at))]
            let create = if case .createCategory = write { true } else { false }
            return ("category", create ? "create" : "update", id(record), data, "/v1/categories", create ? "POST" : "PUT", "")
        case .deleteCategory(let record, let target, let at):
            var data: JSONObject = ["id": .string(id(record)), "updated_at": .string(clientTime(at))]
            var query = "?updated_at=" + queryEncoded(clientTime(at))
            if let target {
                data["reassign_category_id"] = .string(id(target))
                query += "&reassign_category_id=" + id(target)
            }
            return ("category", "delete", id(record), data, "/v1/categories", "DELETE", query)
        case .updateLocation(let record, let category, let name, let at), .createLocation(let record, let category, let name, let at):
            guard case .object(var data) = locationBody(id: id(record), categoryID: id(category), name: name) else {
                preconditionFailure("locationBody is an object")
            }
            data["updated_at"] = .string(clientTime(at))
            let create = if case .createLocation = write { true } else { false }
            return ("location", create ? "create" : "update", id(record), data, "/v1/locations", create ? "POST" : "PUT", "")
        case .deleteLocation(let record, let at):
            let data: JSONObject = ["id": .string(id(record)), "updated_at": .string(clientTime(at))]
            return ("location", "delete", id(record), data, "/v1/locations", "DELETE", "?updated_at=" + queryEncoded(clientTime(at)))
        }
    }
}

/// The state one order ended in, as the change feed reports it: every record written since the
/// user's first pull, live (its content, without what depends on the order or the user: `version`,
/// `user_id`, and the `location_count` the feed does not re-send) or a tombstone (its `deleted_at`).
struct FeedState: Equatable, CustomStringConvertible {
    var records: [String: String] = [:]

    var description: String {
        let names = Dictionary(uniqueKeysWithValues: WriteOrderFixture.ids.map { ($1, $0) })
        return records.keys.sorted().map { key in
            var line = "\(key): \(records[key] ?? "")"
            for (id, name) in names { line = line.replacingOccurrences(of: id, with: name) }
            return line
        }.joined(separator: "\n")
    }

    /// Each record by fixture name: `deleted @m`, a category's `name @m`, a location's
    /// `category name @m` (m: the minute of its `updated_at` or `deleted_at`).
    var summary: [String: String] {
        let names = Dictionary(uniqueKeysWithValues: WriteOrderFixture.ids.map { ($1, $0) })
        func minute(_ text: String) -> String { (0...9).first { clientTime($0) == text }.map { "@\($0)" } ?? text }
        var summary: [String: String] = [:]
        for (key, value) in records {
            let name = names[String(key.split(separator: ":").last ?? "")] ?? key
            if value.hasPrefix("deleted at ") {
                summary[name] = "deleted " + minute(String(value.dropFirst("deleted at ".count)))
            } else if case .object(let record)? = try? JSONParser.parse(value) {
                let category = record["category_id"]?.stringValue.map { (names[$0] ?? $0) + " " } ?? ""
                summary[name] = category + record.string("name") + " " + minute(record.string("updated_at"))
            }
        }
        return summary
    }

    /// Differences from `other`, one line each.
    func difference(from other: FeedState) -> String {
        Set(records.keys).union(other.records.keys).sorted().compactMap { key in
            records[key] == other.records[key] ? nil : "\(key):\n   \(records[key] ?? "absent")\n   \(other.records[key] ?? "absent")"
        }.joined(separator: "\n")
    }
}

/// Runs every arrival order of a scenario and compares the ends.
struct WriteOrderRun {
    let server: TestServer

    /// The state after the base records and then `writes` in this order, read from the feed; the
    /// listings must show the feed's live records, with location counts that match them.
    func state(after writes: [OrderedWrite], pushEvery offset: Int) throws -> FeedState {
        let user = try APIUser.fresh(on: server)
        let client = try SyncTestClient(server, uid: user.uid)
        let start = try client.drain(limit: 1000).cursor
        let writer = OrderedWriter(user: user)
        for write in WriteOrderFixture.base { try #require(try writer.send(write, push: false) == 201) }
        for (index, write) in writes.enumerated() { try writer.send(write, push: (index + offset) % 2 == 1) }
        var state = FeedState()
        var live: [String: JSONObject] = [:]
        for page in try client.drain(since: start, limit: 1000).pages {
            for change in page.changes {
                let key = change.string("type") + ":" + change.string("id")
                if change.string("action") == "upsert" {
                    var data = change.dataObject
                    data["version"] = nil
                    data["location_count"] = nil
                    data["user_id"] = nil
                    state.records[key] = String(decoding: JSONWriter.encode(.object(data)), as: UTF8.self)
                    live[key] = data
                } else {
                    state.records[key] = "deleted at " + change.string("deleted_at")
                    live[key] = nil
                }
            }
        }
        // What the listings show is what the feed said (the fixture's records only; the default
        // categories are never written).
        let categories = try client.listCategories().filter { WriteOrderFixture.ids.values.contains($0.string("id")) }
        let locations = try client.listLocations()
        var counts: [String: Int] = [:]
        for location in locations { counts[location.string("category_id"), default: 0] += 1 }
        for category in categories {
            #expect(category.int("location_count") == Int64(counts[category.string("id"), default: 0]))
        }
        let listed = Set((categories.map { "category:" + $0.string("id") }) + locations.map { "location:" + $0.string("id") })
        #expect(listed == Set(live.keys), "the listings show the feed's live records")
        return state
    }

    /// Every order of `scenario` ends where the first one does (and where the scenario expects).
    func expectOrderIndependent(_ scenario: WriteOrderScenario) throws {
        let orders = permutations(of: Array(scenario.writes.indices))
        var first: FeedState?
        for (number, order) in orders.enumerated() {
            let writes = order.map { scenario.writes[$0] }
            let state = try state(after: writes, pushEvery: number)
            guard let reference = first else {
                first = state
                let summary = state.summary
                for (record, expected) in scenario.expected {
                    #expect(summary[record] == expected, "\(scenario.name): \(record)")
                }
                continue
            }
            if state != reference {
                Issue.record(
                    """
                    \(scenario.name): order \(writes) ended elsewhere than \(orders[0].map { scenario.writes[$0] }):
                    \(state.difference(from: reference))
                    """)
                return
            }
        }
    }
}

/// Every ordering of `items`.
func permutations<Element>(of items: [Element]) -> [[Element]] {
    guard items.count > 1 else { return [items] }
    var result: [[Element]] = []
    for (index, item) in items.enumerated() {
        var rest = items
        rest.remove(at: index)
        result += permutations(of: rest).map { [item] + $0 }
    }
    return result
}

@Suite("Last write wins in any arrival order (issue 22, openapi.yaml)")
struct WriteOrderTests {
    /// The cases that first showed the order mattering, and the cross-record cases.
    static let scenarios: [WriteOrderScenario] = [
        WriteOrderScenario(
            name: "a location deleted twice and updated between the two deletes",
            writes: [.deleteLocation("L1", at: 1), .deleteLocation("L1", at: 3), .updateLocation("L1", category: "A", name: "x", at: 2)],
            expected: ["L1": "deleted @3"]),
        WriteOrderScenario(
            name: "a category deleted twice and updated between the two deletes",
            writes: [
                .deleteCategory("A", reassignTo: nil, at: 1), .deleteCategory("A", reassignTo: nil, at: 3),
                .updateCategory("A", name: "x", at: 2),
            ],
            expected: ["A": "deleted @3", "L1": "deleted @0", "L2": "deleted @0"]),
        WriteOrderScenario(
            name: "location writes into a category deleted by an older delete",
            writes: [
                .deleteCategory("A", reassignTo: nil, at: 1), .updateLocation("L3", category: "A", name: "moved", at: 2),
                .createLocation("L4", category: "A", name: "new", at: 3),
            ],
            expected: ["A": "deleted @1", "L3": "deleted @2", "L4": "deleted @3"]),
        WriteOrderScenario(
            name: "location writes into a category deleted by a newer delete",
            writes: [
                .updateLocation("L3", category: "A", name: "moved", at: 1), .createLocation("L4", category: "A", name: "new", at: 2),
                .deleteCategory("A", reassignTo: nil, at: 3),
            ],
            expected: ["A": "deleted @3", "L3": "deleted @1", "L4": "deleted @2"]),
        WriteOrderScenario(
            name: "a cascade delete against a newer and an older location write in that category",
            writes: [
                .deleteCategory("A", reassignTo: nil, at: 2), .updateLocation("L1", category: "A", name: "edit", at: 3),
                .updateLocation("L2", category: "B", name: "out", at: 1),
            ],
            expected: ["L1": "deleted @3", "L2": "B out @1"]),
        WriteOrderScenario(
            name: "a cascade delete, then the category written again",
            writes: [
                .deleteCategory("A", reassignTo: nil, at: 2), .updateCategory("A", name: "back", at: 4),
                .updateLocation("L1", category: "A", name: "edit", at: 3), .updateLocation("L2", category: "A", name: "older", at: 1),
            ],
            expected: ["A": "back @4", "L1": "A edit @3", "L2": "A older @1"]),
        WriteOrderScenario(
            name: "a reassign to a category deleted later",
            writes: [
                .deleteCategory("A", reassignTo: "T", at: 1), .deleteCategory("T", reassignTo: nil, at: 2),
                .updateLocation("L3", category: "T", name: "into T", at: 3),
            ],
            expected: ["A": "deleted @1", "T": "deleted @2", "L1": "deleted @0", "L3": "deleted @3"]),
        WriteOrderScenario(
            name: "a reassign to a category deleted earlier, which comes back",
            writes: [
                .deleteCategory("T", reassignTo: nil, at: 1), .deleteCategory("A", reassignTo: "T", at: 2),
                .updateCategory("T", name: "T back", at: 3),
            ],
            expected: ["T": "T back @3", "L1": "T L1 @0", "L2": "T L2 @0"]),
        WriteOrderScenario(
            name: "two categories reassigned to each other",
            writes: [
                .deleteCategory("A", reassignTo: "B", at: 1), .deleteCategory("B", reassignTo: "A", at: 2),
                .updateLocation("L1", category: "B", name: "into B", at: 3),
            ],
            expected: ["L1": "deleted @3", "L2": "deleted @0", "L3": "deleted @0"]),
        WriteOrderScenario(
            name: "a cascade and a reassign delete of the same category",
            writes: [
                .deleteCategory("A", reassignTo: nil, at: 1), .deleteCategory("A", reassignTo: "T", at: 2),
                .updateLocation("L1", category: "A", name: "edit", at: 3),
            ],
            expected: ["A": "deleted @2", "L1": "T edit @3", "L2": "T L2 @0"]),
        WriteOrderScenario(
            name: "a delete and a write of the same time, and an older write",
            writes: [
                .deleteLocation("L1", at: 2), .updateLocation("L1", category: "A", name: "tie", at: 2),
                .updateLocation("L1", category: "B", name: "older", at: 1),
            ],
            expected: ["L1": "deleted @2"]),
        WriteOrderScenario(
            name: "upserts, a reassign and a location delete",
            writes: [
                .createCategory("A", name: "upsert", at: 2), .deleteCategory("A", reassignTo: "B", at: 1),
                .createLocation("L1", category: "A", name: "upsert", at: 3), .deleteLocation("L2", at: 4),
            ],
            expected: ["A": "upsert @2", "L1": "A upsert @3", "L2": "deleted @4"]),
    ]

    /// Random sets of four writes over the fixture, with distinct times (a seeded generator, so a
    /// failure names a set that can be run again).
    static func randomScenarios(count: Int, seed: UInt64) -> [WriteOrderScenario] {
        var generator = SeededGenerator(seed: seed)
        let categories = ["A", "B", "T"]
        let locations = ["L1", "L2", "L3"]
        var scenarios: [WriteOrderScenario] = []
        for number in 0..<count {
            var times = Array(1...4)
            times.shuffle(using: &generator)
            var newLocations = ["L4", "L5"]
            let writes = times.map { at -> OrderedWrite in
                let category = categories.randomElement(using: &generator) ?? "A"
                let location = locations.randomElement(using: &generator) ?? "L1"
                switch Int.random(in: 0..<9, using: &generator) {
                case 0: return .updateCategory(category, name: "c\(at)", at: at)
                case 1: return .createCategory(category, name: "c\(at)", at: at)
                case 2, 3: return .deleteCategory(category, reassignTo: nil, at: at)
                case 4:
                    let target = categories.filter { $0 != category }.randomElement(using: &generator) ?? "T"
                    return .deleteCategory(category, reassignTo: target, at: at)
                case 5, 6: return .updateLocation(location, category: category, name: "l\(at)", at: at)
                case 7 where !newLocations.isEmpty:
                    return .createLocation(newLocations.removeFirst(), category: category, name: "n\(at)", at: at)
                default: return .deleteLocation(location, at: at)
                }
            }
            scenarios.append(WriteOrderScenario(name: "random set \(number) of seed \(seed)", writes: writes))
        }
        return scenarios
    }

    @Test("every arrival order of a write set ends in the same state, as the feed reports it", arguments: scenarios)
    func namedScenario(_ scenario: WriteOrderScenario) throws {
        try WriteOrderRun(server: SharedServer.get()).expectOrderIndependent(scenario)
    }

    @Test(
        "every arrival order of random write sets ends in the same state",
        arguments: randomScenarios(
            count: Int(ProcessInfo.processInfo.environment["LOCIFY_WRITE_ORDER_SETS"] ?? "") ?? 16,
            seed: UInt64(ProcessInfo.processInfo.environment["LOCIFY_WRITE_ORDER_SEED"] ?? "") ?? 22))
    func randomScenario(_ scenario: WriteOrderScenario) throws {
        try WriteOrderRun(server: SharedServer.get()).expectOrderIndependent(scenario)
    }

    @Test("a second, newer delete moves the tombstone to its time (and an older one changes nothing)")
    func repeatedDelete() throws {
        let user = try APIUser.fresh()
        let category = newID()
        try user.createCategory(category, updatedAtMinute: 0)
        let location = try user.createLocation(in: category, ["updated_at": .string(clientTime(0))])
        let id = location.string("id")
        expectNoContent(try user.delete("/v1/locations/\(id)?updated_at=" + queryEncoded(clientTime(1))))
        expectNoContent(try user.delete("/v1/locations/\(id)?updated_at=" + queryEncoded(clientTime(3))))
        expectNoContent(try user.delete("/v1/locations/\(id)?updated_at=" + queryEncoded(clientTime(2))))
        // The update made between the two deletes loses to the second one.
        let update = try user.put("/v1/locations/\(id)", locationBody(id: id, categoryID: category, ["updated_at": .string(clientTime(2))]))
        expectConflict(update, data: tombstoneJSON(id: id, deletedAt: clientTime(3)))
    }
}
