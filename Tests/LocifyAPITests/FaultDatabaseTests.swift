import Foundation
import JSON
import Postgres
import Testing
import TestSupport
import TestSupportDatabase
import TestSupportServer

/// Database faults under write load (issue 9): PostgreSQL stopped and restarted in fast and
/// immediate mode, and server connections killed (`pg_terminate_backend`), some of them inside
/// a transaction, while writers keep writing. The server must answer 503 S003 with `Retry-After`
/// while the database is gone (never a 500, never a hang), recover on its own, and every write it
/// acknowledged must be stored afterwards. `scripts/chaos-db` runs the long version.
@Suite("Faults: PostgreSQL stops, crashes and drops connections under write load", .serialized)
struct FaultDatabaseTests {
    @Test("fast and immediate restarts and killed connections: 503 S003 while down, recovery without a restart, no acknowledged write lost")
    func restartsAndKilledConnectionsUnderLoad() throws {
        let cluster = try PostgresCluster.start()
        defer { cluster.remove() }
        try cluster.requireDurableCommits()
        let server = try TestServer.start { configuration in
            configuration.databaseURL = cluster.connectionString
        }
        defer { server.stop() }
        let users = (0..<4).map { "fault-db-\($0)-" + UUID().uuidString.prefix(8).lowercased() }
        let load = WriteLoad(port: server.port, tokens: try users.map { try server.token(for: $0) })
        load.start()
        defer { load.stop() }
        #expect(load.waitForProgress(20), "no progress before any fault")

        var readinessWhileDown: [Int] = []
        for mode in [PostgresCluster.StopMode.fast, .immediate] {
            try cluster.stop(mode)
            let deadline = ContinuousClock.now + .seconds(1)
            while ContinuousClock.now < deadline {
                readinessWhileDown.append(try server.request("GET", "/health/ready").status)
                Thread.sleep(forTimeInterval: 0.1)
            }
            try cluster.startServer()
            #expect(load.waitForProgress(20), "no recovery after the \(mode) restart")
        }
        #expect(readinessWhileDown.allSatisfy { $0 == 503 }, "\(readinessWhileDown)")

        var terminated = 0
        let killUntil = ContinuousClock.now + .seconds(2)
        while ContinuousClock.now < killUntil {
            terminated += try cluster.terminateBackends(applicationName: "locify-server")
            Thread.sleep(forTimeInterval: 0.05)
        }
        #expect(terminated > 0)
        #expect(load.waitForProgress(20), "no recovery after killed connections")
        #expect(try server.request("GET", "/health/ready").status == 200)
        let outcomes = load.stop()

        let unavailable = outcomes.filter { $0.status == 503 }
        #expect(!unavailable.isEmpty, "the load never met the outage")
        for outcome in unavailable {
            #expect(outcome.errorCode == "S003" && outcome.retryAfter != nil, "503 without S003/Retry-After: \(outcome)")
        }
        let unexpected = outcomes.filter { ![200, 201, 503].contains($0.status ?? 0) || $0.transportError != nil }
        #expect(unexpected.isEmpty, "unexpected outcomes: \(unexpected.prefix(5))")

        let acknowledged = outcomes.acknowledgedIDs
        let stored = try cluster.withAdministrationConnection { connection in
            try connection.query(
                "SELECT id::text FROM categories WHERE user_id = ANY(\(users)) AND deleted_at IS NULL"
            ).map { try $0.decode(0, as: String.self) }
        }
        let lost = acknowledged.subtracting(stored)
        #expect(lost.isEmpty, "\(lost.count) of \(acknowledged.count) acknowledged writes lost")
        #expect(acknowledged.count > 60)
        print(
            "FaultDatabaseTests: \(outcomes.count) requests, \(acknowledged.count) acknowledged writes, "
                + "\(unavailable.count) answered 503 S003, \(terminated) backends terminated, \(lost.count) lost")
    }
}
