import Foundation
import JSON
import Locify
import LocifyJobs
import Postgres
import Synchronization
import Testing
import TestSupport
import TestSupportDatabase
import TestSupportServer

/// Process faults (issue 9) on a real `locify-server` child process: `kill -9` in the middle of
/// a push batch (with one change held inside its transaction by a row lock, so the kill lands
/// mid-transaction), and SIGTERM under load. `scripts/chaos-process` runs the long version.
@Suite("Faults: the server process is killed or terminated", .serialized)
struct FaultProcessTests {
    /// Where the batch is held when the server is killed.
    enum HoldPoint: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// The 4th location update (change 35 of 50 in application order).
        case locationUpdate
        /// The category cascade delete (change 49), after it took its change stamp (it tombstones
        /// the category; its locations are hidden later, `PendingCascades`).
        case cascadeDelete
        /// The category reassign delete (change 50).
        case reassignDelete

        var testDescription: String { rawValue }
    }

    @Test("kill -9 during a push batch: each change is applied whole or not at all, in order; replaying the batch converges to a clean push's state", arguments: HoldPoint.allCases)
    func killDuringPush(hold: HoldPoint) throws {
        let database = try TestDatabase.create(migrationsDirectory: ProjectPaths.migrations, poolSize: 3)
        defer { try? database.drop() }
        let plan = PushPlan()
        let reference = "ref-" + UUID().uuidString.prefix(8).lowercased()
        let victim = "kill-" + UUID().uuidString.prefix(8).lowercased()

        var server = try ServerProcess.start(databaseURL: database.connectionString)
        for user in [reference, victim] {
            let setup = try server.request("POST", "/v1/sync/push", token: try ServerProcess.token(for: user), json: plan.setupBatch)
            #expect(setup.status == 200 && plan.allApplied(setup), "setup: \(setup.text)")
        }
        let clean = try server.request("POST", "/v1/sync/push", token: try ServerProcess.token(for: reference), json: plan.batch)
        #expect(clean.status == 200 && plan.allApplied(clean), "clean push: \(clean.text)")
        let expected = try StoredState.read(database.pool, reference)
        let before = try StoredState.read(database.pool, victim)

        // Hold one row, push, wait until the batch is stuck on it, then kill -9.
        let blocker = try PostgresConnection.connect(database.configuration, logger: TestDatabase.logger)
        try blocker.execute(unsafeSQL: "BEGIN")
        let held = plan.heldRow(hold)
        _ = try blocker.query("SELECT id FROM \(unsafeSQL: held.table) WHERE user_id = \(victim) AND id = \(held.id) FOR UPDATE")
        let pushClient = try RawHTTPClient(port: server.port)
        defer { pushClient.close() }
        let payload = JSONWriter.encode(plan.batch)
        try pushClient.send(
            Array(
                ("POST /v1/sync/push HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(try ServerProcess.token(for: victim))\r\n"
                    + "Content-Type: application/json\r\nContent-Length: \(payload.count)\r\n\r\n").utf8) + payload)
        let stuck = try eventually {
            try database.pool.withConnection { connection in
                try connection.query(
                    """
                    SELECT count(*) FROM pg_stat_activity
                    WHERE datname = current_database() AND wait_event_type = 'Lock' AND application_name = 'locify-server'
                    """
                ).first?.decode(0, as: Int.self) == 1
            }
        }
        #expect(stuck, "the push never reached the held row")
        server.killHard()
        #expect(throws: RawHTTPClientError.self) { try pushClient.readResponse(timeout: .seconds(10)) }
        try blocker.execute(unsafeSQL: "ROLLBACK")
        // The orphaned backend dies once its statement finishes and it cannot answer.
        #expect(
            try eventually {
                try database.pool.withConnection { connection in
                    try connection.query(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'locify-server'"
                    ).first?.decode(0, as: Int.self) == 0
                }
            })

        let afterKill = try StoredState.read(database.pool, victim)
        var applied: [Bool] = []
        for change in plan.changes {
            let whole = change.keys.allSatisfy { afterKill.records[$0] == expected.records[$0] }
            let none = change.keys.allSatisfy { afterKill.records[$0] == before.records[$0] }
            #expect(whole || none, "change \(change.label) is half applied")
            applied.append(whole && !none)
        }
        let appliedCount = applied.prefix { $0 }.count
        #expect(applied == Array(repeating: true, count: appliedCount) + Array(repeating: false, count: applied.count - appliedCount), "not a prefix: \(applied)")
        #expect(appliedCount == plan.heldIndex(hold), "applied \(appliedCount) changes before the held one")
        #expect(afterKill.countsAreConsistent, "derived counts drifted: \(afterKill.countMismatches)")

        // The client never saw a response: it replays the whole batch on a restarted server.
        server = try ServerProcess.start(databaseURL: database.connectionString)
        defer { server.killHard() }
        let replay = try server.request("POST", "/v1/sync/push", token: try ServerProcess.token(for: victim), json: plan.batch)
        #expect(replay.status == 200, "replay: \(replay.text)")
        let final = try StoredState.read(database.pool, victim)
        #expect(final.records == expected.records, "replay did not converge: \(final.differences(from: expected).prefix(5))")
        #expect(final.countsAreConsistent)
        print("FaultProcessTests.kill(\(hold)): \(appliedCount) of 50 changes applied before kill -9, replay converged")
    }

    @Test("SIGTERM under load: in-flight requests finish, no request the server accepted sees a reset, acknowledged writes are stored, exit 0")
    func sigtermUnderLoad() throws {
        let database = try TestDatabase.create(migrationsDirectory: ProjectPaths.migrations, poolSize: 2)
        defer { try? database.drop() }
        let server = try ServerProcess.start(databaseURL: database.connectionString, environment: ["LOCIFY_SHUTDOWN_GRACE_SECONDS": "10"])
        defer { server.killHard() }
        let users = (0..<6).map { "term-\($0)-" + UUID().uuidString.prefix(8).lowercased() }
        let load = WriteLoad(port: server.port, tokens: try users.map { try ServerProcess.token(for: $0) })
        load.start()
        defer { load.stop() }
        #expect(load.waitForProgress(60), "no progress before SIGTERM")
        server.send(SIGTERM)
        let status = server.waitForExit(timeout: .seconds(60))
        #expect(status.flatMap(ServerProcess.exitCode) == 0, "exit status \(String(describing: status))")
        let outcomes = load.stop()

        let answered = Set(server.logLines.filter { $0["msg"]?.stringValue == "request" }.compactMap { $0["request_id"]?.stringValue })
        let resetAfterAccept = outcomes.filter { $0.transportError != nil && answered.contains($0.requestID) }
        #expect(resetAfterAccept.isEmpty, "accepted requests that saw a reset: \(resetAfterAccept.prefix(5))")
        let statuses = Set(outcomes.compactMap(\.status))
        #expect(statuses.isSubset(of: [200, 201, 503]), "\(statuses)")
        #expect(outcomes.filter { $0.status == 503 }.allSatisfy { $0.errorCode == "S003" })

        let stored = try database.pool.withConnection { connection in
            try Set(
                connection.query("SELECT id::text FROM categories WHERE user_id = ANY(\(users)) AND deleted_at IS NULL")
                    .map { try $0.decode(0, as: String.self) })
        }
        let lost = outcomes.acknowledgedIDs.subtracting(stored)
        #expect(lost.isEmpty, "\(lost.count) acknowledged writes lost")
        print(
            "FaultProcessTests.sigterm: \(outcomes.count) requests, \(answered.count) answered by the server, "
                + "\(outcomes.filter { $0.status != nil }.count) complete responses, "
                + "\(outcomes.transportFailures.count) transport failures (none after acceptance), "
                + "\(outcomes.acknowledgedIDs.count) acknowledged writes, \(lost.count) lost")
    }

    @Test("SIGTERM with LOCIFY_SHUTDOWN_DELAY_SECONDS: readiness is 503 S003 at once, new connections are served until the delay is over, then exit 0")
    func sigtermWithShutdownDelay() throws {
        let database = try TestDatabase.create(migrationsDirectory: ProjectPaths.migrations, poolSize: 2)
        defer { try? database.drop() }
        let server = try ServerProcess.start(
            databaseURL: database.connectionString, environment: ["LOCIFY_SHUTDOWN_DELAY_SECONDS": "4"])
        defer { server.killHard() }
        let token = try ServerProcess.token(for: "term-delay")
        #expect(try server.request("GET", "/health/ready").status == 200)
        server.send(SIGTERM)
        let notReady = try eventually(timeout: .seconds(2)) { try server.request("GET", "/health/ready").status == 503 }
        #expect(notReady)
        let ready = try server.request("GET", "/health/ready")
        #expect(ready.errorCode == "S003")
        #expect(ready.headers["Retry-After"] != nil)
        let created = try server.request(
            "POST", "/v1/categories", token: token, json: ["id": "0b7c9d2e-3f4a-4b5c-8d6e-7f8091a2b3c4", "name": "While draining"])
        #expect(created.status == 201)
        let status = server.waitForExit(timeout: .seconds(60))
        #expect(status.flatMap(ServerProcess.exitCode) == 0, "exit status \(String(describing: status))")
    }
}

/// The push batch of the kill test: a setup batch (three categories with locations, locations to
/// update and to delete), then 50 changes in application order, each touching records no other
/// change of the batch touches, so each change's effect can be checked on its own.
struct PushPlan {
    struct Change {
        var label: String
        var json: JSONValue
        /// The records (`category:<id>` / `location:<id>`) this change writes.
        var keys: [String]
    }

    let cascadeCategory = UUID().uuidString.lowercased()
    let reassignCategory = UUID().uuidString.lowercased()
    let targetCategory = UUID().uuidString.lowercased()
    let cascadeLocations = (0..<3).map { _ in UUID().uuidString.lowercased() }
    let reassignLocations = (0..<3).map { _ in UUID().uuidString.lowercased() }
    let updatedLocations = (0..<10).map { _ in UUID().uuidString.lowercased() }
    let deletedLocations = (0..<6).map { _ in UUID().uuidString.lowercased() }
    let newCategories = (0..<12).map { _ in UUID().uuidString.lowercased() }
    let newLocations = (0..<20).map { _ in UUID().uuidString.lowercased() }

    private static func time(_ minute: Int) -> JSONValue {
        .string(String(format: "2025-04-01T10:%02d:00.000Z", minute))
    }

    private static func change(_ type: String, _ action: String, _ data: JSONObject) -> JSONValue {
        ["type": .string(type), "action": .string(action), "data": .object(data)]
    }

    private static func location(_ id: String, in category: String, name: String, minute: Int) -> JSONObject {
        [
            "id": .string(id), "category_id": .string(category), "name": .string(name), "latitude": .number(Double(minute)),
            "longitude": .number(-Double(minute)), "address": "1 Test Street", "image_urls": ["https://img.example.com/a.jpg"],
            "created_at": time(minute), "updated_at": time(minute),
        ]
    }

    var setupBatch: JSONValue {
        var changes: [JSONValue] = []
        for category in [cascadeCategory, reassignCategory, targetCategory] {
            changes.append(Self.change("category", "create", ["id": .string(category), "name": "Setup", "updated_at": Self.time(0)]))
        }
        for (ids, category) in [
            (cascadeLocations, cascadeCategory), (reassignLocations, reassignCategory), (updatedLocations, targetCategory),
            (deletedLocations, targetCategory),
        ] {
            for id in ids {
                changes.append(Self.change("location", "create", Self.location(id, in: category, name: "Before", minute: 1)))
            }
        }
        return ["changes": .array(changes)]
    }

    /// The 50 changes in the order the server applies them (the order they are sent).
    var changes: [Change] {
        var changes: [Change] = []
        for (index, id) in newCategories.enumerated() {
            changes.append(
                Change(
                    label: "category create \(index)",
                    json: Self.change("category", "create", ["id": .string(id), "name": .string("New \(index)"), "updated_at": Self.time(10)]),
                    keys: ["category:\(id)"]))
        }
        for (index, id) in newLocations.enumerated() {
            let category = newCategories[index % newCategories.count]
            changes.append(
                Change(
                    label: "location create \(index)",
                    json: Self.change("location", "create", Self.location(id, in: category, name: "Created \(index)", minute: 11)),
                    keys: ["location:\(id)"]))
        }
        for (index, id) in updatedLocations.enumerated() {
            changes.append(
                Change(
                    label: "location update \(index)",
                    json: Self.change("location", "update", Self.location(id, in: targetCategory, name: "After \(index)", minute: 12)),
                    keys: ["location:\(id)"]))
        }
        for (index, id) in deletedLocations.enumerated() {
            changes.append(
                Change(
                    label: "location delete \(index)", json: Self.change("location", "delete", ["id": .string(id), "updated_at": Self.time(13)]),
                    keys: ["location:\(id)"]))
        }
        changes.append(
            Change(
                label: "category cascade delete",
                json: Self.change("category", "delete", ["id": .string(cascadeCategory), "updated_at": Self.time(14)]),
                keys: ["category:\(cascadeCategory)"] + cascadeLocations.map { "location:\($0)" }))
        changes.append(
            Change(
                label: "category reassign delete",
                json: Self.change(
                    "category", "delete",
                    ["id": .string(reassignCategory), "reassign_category_id": .string(targetCategory), "updated_at": Self.time(15)]),
                keys: ["category:\(reassignCategory)"] + reassignLocations.map { "location:\($0)" }))
        return changes
    }

    var batch: JSONValue { ["changes": .array(changes.map(\.json))] }

    /// The row whose lock holds the batch at `hold`: a location the held change rewrites, or the
    /// category a cascade tombstones (it rewrites no location itself).
    func heldRow(_ hold: FaultProcessTests.HoldPoint) -> (table: String, id: UUID) {
        let (table, id) =
            switch hold {
            case .locationUpdate: ("locations", updatedLocations[3])
            case .cascadeDelete: ("categories", cascadeCategory)
            case .reassignDelete: ("locations", reassignLocations[2])
            }
        return (table, UUID(uuidString: id) ?? UUID())
    }

    /// How many changes come before the held one.
    func heldIndex(_ hold: FaultProcessTests.HoldPoint) -> Int {
        switch hold {
        case .locationUpdate: return newCategories.count + newLocations.count + 3
        case .cascadeDelete: return 48
        case .reassignDelete: return 49
        }
    }

    /// Whether every result of a push response is `applied`.
    func allApplied(_ response: TestResponse) -> Bool {
        let results = response.object["results"]?.arrayValue ?? []
        return !results.isEmpty && results.allSatisfy { $0.objectValue?["status"]?.stringValue == "applied" }
    }
}

/// One user's stored rows (tombstones included) as comparable text, and the derived counts, with
/// the pending cascades settled first, as any reader sees them (`PendingCascades`).
struct StoredState {
    /// `category:<id>` / `location:<id>` to the row's client-visible columns.
    var records: [String: String] = [:]
    /// Per live category: stored `location_count` and the live locations actually in it.
    var counts: [String: (stored: Int64, actual: Int64)] = [:]

    static func read(_ pool: ConnectionPool, _ userID: String) throws -> StoredState {
        let services = LocifyServices(pool: pool, settings: LocifySettings(storageBucket: TestConstants.bucket))
        CascadeWorker(pool: pool, cascades: services.cascades, logger: TestDatabase.logger).settleNow()
        return try pool.withConnection { connection in
            var state = StoredState()
            for row in try connection.query(
                """
                SELECT c.id::text, c.name || '|' || coalesce(c.icon, '') || '|' || c.version || '|' || c.created_at || '|'
                    || c.updated_at || '|' || coalesce(c.deleted_at::text, 'live'),
                    c.deleted_at IS NULL, c.location_count,
                    (SELECT count(*) FROM locations l
                     WHERE l.user_id = c.user_id AND l.category_id = c.id AND l.deleted_at IS NULL)
                FROM categories c WHERE c.user_id = \(userID)
                """)
            {
                let id = try row.decode(0, as: String.self)
                state.records["category:\(id)"] = try row.decode(1, as: String.self)
                if try row.decode(2, as: Bool.self) {
                    state.counts[id] = (try row.decode(3, as: Int64.self), try row.decode(4, as: Int64.self))
                }
            }
            for row in try connection.query(
                """
                SELECT id::text, category_id || '|' || name || '|' || coalesce(address, '') || '|' || latitude || '|'
                    || longitude || '|' || is_favorite || '|' || array_to_string(image_urls, ',') || '|' || version || '|'
                    || created_at || '|' || updated_at || '|' || coalesce(deleted_at::text, 'live')
                FROM locations WHERE user_id = \(userID)
                """)
            {
                state.records["location:\(try row.decode(0, as: String.self))"] = try row.decode(1, as: String.self)
            }
            return state
        }
    }

    var countMismatches: [String] {
        counts.filter { $0.value.stored != $0.value.actual }.map { "\($0.key): \($0.value.stored) stored, \($0.value.actual) live" }
    }

    var countsAreConsistent: Bool { countMismatches.isEmpty }

    func differences(from other: StoredState) -> [String] {
        Set(records.keys).union(other.records.keys).sorted().compactMap { key in
            records[key] == other.records[key] ? nil : "\(key): \(records[key] ?? "absent") vs \(other.records[key] ?? "absent")"
        }
    }
}
