import Primitives
import Foundation
import JSON
import Postgres
import Testing
import TestSupport

@testable import LocifyAPI
import TestSupportServer
import TestSupportDatabase

/// Issue 13 item 8: requests refused for authentication or routing draw on a per-address token
/// bucket (429 S001 once empty), their log lines are bounded, a real user is never refused by it,
/// and `/health/ready` probes the database at most once per second.
@Suite("Hostile input: unauthenticated floods", .serialized)
struct HostileFloodTests {
    static func request(_ method: String, _ target: String, token: String?) -> String {
        var text = "\(method) \(target) HTTP/1.1\r\nHost: x\r\n"
        if let token { text += "Authorization: Bearer \(token)\r\n" }
        return text + "\r\n"
    }

    @Test("5,000 requests with garbage tokens from one address: 429 S001 after the burst, bounded log lines, a real user unaffected")
    func garbageTokenFlood() throws {
        let database = try TestDatabase.create(migrationsDirectory: ProjectPaths.migrations, poolSize: 1)
        defer { try? database.drop() }
        // The documented defaults: burst 100, 10 per second.
        let server = try ServerProcess.start(databaseURL: database.connectionString)
        defer { server.killHard() }
        let realToken = try ServerProcess.token(for: "flood-real-user")
        #expect(try server.request("GET", "/v1/categories", token: realToken).status == 200)
        let linesBefore = server.logText.split(separator: "\n").count

        let started = ContinuousClock.now
        let responses = try PipelinedFlood.send(port: server.port, count: 5_000, sourceHost: "127.0.0.2") { index in
            Self.request("GET", "/v1/categories", token: "garbage-\(index)")
        }
        let elapsed = (ContinuousClock.now - started).seconds
        // The real user, from the flooding address itself and from another one, meanwhile.
        let fromFloodingAddress = try PipelinedFlood.send(port: server.port, count: 3, connections: 1, sourceHost: "127.0.0.2") { _ in
            Self.request("GET", "/v1/categories", token: realToken)
        }
        #expect(fromFloodingAddress.map(\.status) == [200, 200, 200])
        #expect(try server.request("GET", "/v1/users/me", token: realToken).status == 200)
        // Another address still gets its own bucket: a garbage token there is a plain 401.
        let otherAddress = try PipelinedFlood.send(port: server.port, count: 1, connections: 1, sourceHost: "127.0.0.3") { _ in
            Self.request("GET", "/v1/categories", token: "garbage")
        }
        #expect(otherAddress.first?.status == 401)

        let unauthorized = responses.filter { $0.status == 401 }.count
        let limited = responses.filter { $0.status == 429 }
        let allowance = 100 + Int(10 * elapsed) + 5
        print("garbage-token flood: \(unauthorized) x 401, \(limited.count) x 429 in \(elapsed) s")
        #expect(unauthorized + limited.count == 5_000)
        #expect(unauthorized >= 100 && unauthorized <= allowance, "401s: \(unauthorized), allowance \(allowance)")
        #expect(responses.first?.status == 401 && responses.last?.status == 429)
        for response in limited.prefix(50) {
            let body = try JSONParser.parse(response.body).objectValue?["error"]?.objectValue
            #expect(body?["code"] == "S001")
            #expect(Int(response.headers["Retry-After"] ?? "").map { $0 >= 1 } == true)
        }

        // Log lines: one request line per admitted refusal, a few summaries; never one per request.
        let floodLines = server.logText.split(separator: "\n").count - linesBefore
        print("garbage-token flood: \(floodLines) log lines")
        #expect(floodLines <= unauthorized + 20, "log lines: \(floodLines)")
        #expect(!server.logText.contains("garbage-"), "tokens never logged")
    }

    @Test("a flood of garbage tokens from 50 addresses, each within its bucket, writes at most about 100 request lines per second")
    func manyAddresses() throws {
        let database = try TestDatabase.create(migrationsDirectory: ProjectPaths.migrations, poolSize: 1)
        defer { try? database.drop() }
        let server = try ServerProcess.start(databaseURL: database.connectionString)
        defer { server.killHard() }
        let linesBefore = server.logText.split(separator: "\n").count
        let started = ContinuousClock.now
        var responses: [RawHTTPResponse] = []
        for address in 10..<60 {
            responses += try PipelinedFlood.send(port: server.port, count: 90, connections: 1, sourceHost: "127.0.0.\(address)") { index in
                Self.request("GET", "/v1/categories", token: "garbage-\(index)")
            }
        }
        let elapsed = (ContinuousClock.now - started).seconds
        let lines = server.logText.split(separator: "\n").count - linesBefore
        print("garbage tokens from 50 addresses: \(responses.filter { $0.status == 401 }.count) x 401 in \(elapsed) s, \(lines) log lines")
        #expect(responses.count == 4_500 && responses.allSatisfy { $0.status == 401 }, "every address stays within its burst")
        #expect(lines <= 100 + Int(100 * elapsed) + 20, "log lines: \(lines)")
    }

    @Test("random paths and wrong methods from one address are limited the same way")
    func notFoundFlood() throws {
        let database = try TestDatabase.create(migrationsDirectory: ProjectPaths.migrations, poolSize: 1)
        defer { try? database.drop() }
        let server = try ServerProcess.start(
            databaseURL: database.connectionString,
            environment: ["LOCIFY_ADDRESS_RATE_LIMIT_BURST": "20", "LOCIFY_ADDRESS_RATE_LIMIT_PER_SECOND": "1"])
        defer { server.killHard() }
        let responses = try PipelinedFlood.send(port: server.port, count: 1_000, connections: 2, sourceHost: "127.0.0.4") { index in
            index % 2 == 0 ? Self.request("GET", "/nothing/\(index)", token: nil) : Self.request("PATCH", "/v1/categories", token: nil)
        }
        let refused = responses.filter { $0.status == 404 || $0.status == 405 }.count
        #expect(refused >= 20 && refused <= 40, "\(refused)")
        #expect(responses.filter { $0.status == 429 }.count == 1_000 - refused)
        #expect(try server.request("GET", "/health").status == 200, "operations endpoints are never limited")
        let wrongMethods = try PipelinedFlood.send(port: server.port, count: 50, connections: 1, sourceHost: "127.0.0.4") { _ in
            Self.request("DELETE", "/health", token: nil)
        }
        #expect(wrongMethods.allSatisfy { $0.status == 405 }, "not even a wrong method on them")
    }

    @Test("LOCIFY_ADDRESS_RATE_LIMIT_PER_SECOND=0 disables the limit")
    func disabled() throws {
        let database = try TestDatabase.create(migrationsDirectory: ProjectPaths.migrations, poolSize: 1)
        defer { try? database.drop() }
        let server = try ServerProcess.start(
            databaseURL: database.connectionString, environment: ["LOCIFY_ADDRESS_RATE_LIMIT_PER_SECOND": "0"])
        defer { server.killHard() }
        let responses = try PipelinedFlood.send(port: server.port, count: 500, connections: 1) { index in
            Self.request("GET", "/v1/categories", token: "garbage-\(index)")
        }
        #expect(responses.allSatisfy { $0.status == 401 })
    }

    @Test("/health/ready probes the database at most once per second under a flood of readiness checks")
    func readinessIsCached() throws {
        let database = try TestDatabase.create(migrationsDirectory: ProjectPaths.migrations, poolSize: 1)
        defer { try? database.drop() }
        /// Committed transactions of the database, once every backend of the server has exited
        /// (a backend flushes its statistics when it exits; while busy only once a second).
        func commits() throws -> Int64 {
            try database.pool.withConnection { connection in
                _ = eventually(timeout: .seconds(30)) {
                    let rows = try? connection.query(
                        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'locify-server' AND datname = current_database()")
                    return (try? rows?.first?.decode(0) as Int64?) == 0
                }
                try connection.query("SELECT pg_stat_force_next_flush()")
                try connection.query("SELECT pg_stat_clear_snapshot()")
                let rows = try connection.query("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
                return try rows.first?.decode(0) ?? 0
            }
        }
        let before = try commits()
        let server = try ServerProcess.start(databaseURL: database.connectionString)
        let started = ContinuousClock.now
        let responses = try PipelinedFlood.send(port: server.port, count: 2_000, connections: 2) { _ in
            Self.request("GET", "/health/ready", token: nil)
        }
        let elapsed = (ContinuousClock.now - started).seconds
        server.killHard()
        #expect(responses.allSatisfy { $0.status == 200 })
        let transactions = try commits() - before
        print("readiness: 2,000 checks in \(elapsed) s; the server's whole life cost \(transactions) database transactions")
        // One probe per second, plus start-up and the background jobs' statements; never one per check.
        #expect(transactions < 200, "\(transactions) transactions")
    }

    @Test("ReadinessCache: concurrent callers share one probe; a new one runs after a second")
    func readinessCacheUnit() throws {
        let clock = Locked<Double>(100)
        let probes = Locked(0)
        let cache = ReadinessCache(clock: MonotonicClock { .seconds(clock.withLock { $0 }) }) {
            probes.withLock { $0 += 1 }
            Thread.sleep(forTimeInterval: 0.05)
            return true
        }
        #expect(cache.isReady())
        try runOnThreads(8) { _ in
            for _ in 0..<50 { _ = cache.isReady() }
        }
        #expect(probes.withLock { $0 } == 1)
        clock.withLock { $0 += 1.01 }
        try runOnThreads(8) { _ in
            for _ in 0..<50 { #expect(cache.isReady()) }
        }
        #expect(probes.withLock { $0 } == 2)
    }
}

/// Issue 13 item 10: a deletion second from the database clock is compared with Google's `iat`
/// with the configured clock skew, so a token issued just before the deletion by a clock running
/// ahead cannot re-create the account.
@Suite("Deleted accounts stay deleted across clock differences")
struct DeletedAccountSkewTests {
    static func deletedSecond(_ server: TestServer, _ uid: String) throws -> Int64 {
        try server.pool.withConnection { connection in
            try connection.query("SELECT deleted_second FROM account_deletions WHERE user_id = \(uid)").first?.decode(0) ?? 0
        }
    }

    @Test("after DELETE /v1/users/me a token with iat up to deletion second + skew is refused (401 E005) and re-creates nothing")
    func tokenWithinSkewRefused() throws {
        let server = try TestServer.start()  // the default skew, 60 s
        defer { server.stop() }
        let uid = "skew-" + UUID().uuidString.prefix(8).lowercased()
        #expect(try server.request("DELETE", "/v1/users/me", token: server.token(for: uid, issuedAt: Date().timeIntervalSince1970 - 30)).status == 204)
        let deleted = try Self.deletedSecond(server, uid)
        for offset in [1, 30, 59, 60] {
            let token = try server.token(for: uid, issuedAt: Double(deleted + Int64(offset)))
            let response = try server.request("GET", "/v1/users/me", token: token)
            #expect(response.status == 401 && response.errorCode == "E005", "iat = deletion + \(offset) s: \(response.text)")
            #expect(response.headers["WWW-Authenticate"] == #"Bearer error="invalid_token""#)
        }
        let rows: Int64 = try server.pool.withConnection { connection in
            try connection.query("SELECT count(*) FROM users WHERE id = \(uid)").first?.decode(0) ?? -1
        }
        #expect(rows == 0)
    }

    @Test("a token issued after deletion second + skew gets a new account")
    func tokenAfterSkewAccepted() throws {
        let server = try TestServer.start(configure: { $0.tokenClockSkewSeconds = 3 })
        defer { server.stop() }
        let uid = "skew-new-" + UUID().uuidString.prefix(8).lowercased()
        #expect(try server.request("DELETE", "/v1/users/me", token: server.token(for: uid, issuedAt: Date().timeIntervalSince1970 - 30)).status == 204)
        let deleted = try Self.deletedSecond(server, uid)
        let refused = try server.request("GET", "/v1/users/me", token: server.token(for: uid, issuedAt: Double(deleted + 3)))
        #expect(refused.status == 401 && refused.errorCode == "E005")
        // iat = deletion + 4 s is within the allowance for a future iat once the clock has passed deletion + 1 s.
        while Date().timeIntervalSince1970 < Double(deleted + 1) + 0.05 { Thread.sleep(forTimeInterval: 0.05) }
        let accepted = try server.request("GET", "/v1/users/me", token: server.token(for: uid, issuedAt: Double(deleted + 4)))
        #expect(accepted.status == 200, "\(accepted.text)")
    }
}
