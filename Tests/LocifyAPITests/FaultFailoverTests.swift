import Foundation
import JSON
import Postgres
import Testing
import TestSupport
import TestSupportServer
import TestSupportDatabase

/// A PostgreSQL failover as the server sees it (issue 14): for a moment its connections may reach
/// a node that is still, or again, a read-only standby (a demoted primary restarting as a replica
/// before the load balancer's check notices). Writes then fail with SQLSTATE 25006; that is the
/// database being unavailable, not a server bug: 503 S003 with `Retry-After`, never a 500.
/// `scripts/cluster chaos --ha` runs the real failover.
@Suite("Faults: the database answers as a read-only standby during a failover")
struct FaultFailoverTests {
    @Test("A write reaching a read-only standby is 503 S003 with Retry-After, and writes succeed again once the primary is back")
    func writeOnStandby() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let uid = "failover-standby"
        #expect(try server.request("GET", "/v1/categories", as: uid).status == 200)

        try setReadOnly(true, database: server.database)
        defer { try? setReadOnly(false, database: server.database) }
        let refused = try server.request(
            "POST", "/v1/categories", as: uid,
            json: ["id": "6f1d2c3b-0a9e-4f8d-8c7b-6a5e4d3c2b1a", "name": "During failover"])
        #expect(refused.status == 503)
        #expect(refused.errorCode == "S003")
        #expect(refused.headers["Retry-After"].flatMap { Int($0) }.map { $0 >= 1 } == true)

        try setReadOnly(false, database: server.database)
        let accepted = try server.request(
            "POST", "/v1/categories", as: uid,
            json: ["id": "6f1d2c3b-0a9e-4f8d-8c7b-6a5e4d3c2b1a", "name": "After failover"])
        #expect(accepted.status == 201)
        #expect(accepted.object["name"]?.stringValue == "After failover")
    }

    /// Makes new sessions of the test database read-only (or not), as a standby's are, and ends
    /// the server's sessions so its pool reconnects into the new state.
    private func setReadOnly(_ readOnly: Bool, database: TestDatabase) throws {
        let terminated: [Int32] = try database.pool.withConnection { connection in
            try connection.execute(
                unsafeSQL: "ALTER DATABASE \(database.name) SET default_transaction_read_only = \(readOnly ? "on" : "off")")
            let pids: [Int32] = try connection.query(
                """
                SELECT pid FROM pg_stat_activity
                WHERE datname = current_database() AND application_name = 'locify-server'
                """
            ).map { row in try row.decode(0) }
            for pid in pids {
                _ = try connection.query("SELECT pg_terminate_backend(\(pid))")
            }
            return pids
        }
        // Terminations are asynchronous: wait until the old sessions are gone.
        let gone = try eventually(timeout: .seconds(10)) {
            try database.pool.withConnection { connection in
                let left = try connection.query("SELECT pid FROM pg_stat_activity").map { row -> Int32 in try row.decode(0) }
                return Set(left).isDisjoint(with: terminated)
            }
        }
        #expect(gone)
    }
}
