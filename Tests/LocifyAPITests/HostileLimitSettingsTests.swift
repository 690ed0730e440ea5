import Foundation
import Glibc
import Testing
import TestSupport

@testable import LocifyAPI
@testable import LocifyServer
import TestSupportServer
import TestSupportDatabase

/// Issue 23 items 2 and 5: the limits' settings are validated (a rate of 1e-20 crashed the first
/// exhausted bucket), the server refuses to start when the open-file limit cannot cover
/// `LOCIFY_MAX_CONNECTIONS`, and a request from an address whose bucket is empty is answered 429
/// before its token is verified.
@Suite("Hostile configuration and floods: limits' settings, the open-file limit, the bucket before verification", .serialized)
struct HostileLimitSettingsTests {
    private static func configuration(_ name: String, _ value: String) throws(ConfigurationError) -> Configuration {
        try Configuration(environment: ["DATABASE_URL": "postgres://localhost/x", "FIREBASE_PROJECT_ID": "p", name: value])
    }

    @Test("rates and bursts from the environment are 0 (off) or within their ranges; 1e-20 and 0.5 are refused by name")
    func bucketSettings() throws {
        for name in ["LOCIFY_RATE_LIMIT_PER_SECOND", "LOCIFY_ADDRESS_RATE_LIMIT_PER_SECOND"] {
            for refused in ["1e-20", "0.0001", "-1", "1000001", "nan", "inf", "ten"] {
                #expect(throws: ConfigurationError.self, "\(name)=\(refused)") { try Self.configuration(name, refused) }
            }
            do {
                _ = try Self.configuration(name, "1e-20")
            } catch {
                #expect(error.variable == name)
                #expect(error.problem.contains("0 (off) or a number from 0.001 to 1000000"))
            }
            for accepted in ["0", "0.001", "1000000"] { _ = try Self.configuration(name, accepted) }
        }
        for name in ["LOCIFY_RATE_LIMIT_BURST", "LOCIFY_ADDRESS_RATE_LIMIT_BURST"] {
            for refused in ["0.5", "1e-20", "-1", "1000001"] {
                #expect(throws: ConfigurationError.self, "\(name)=\(refused)") { try Self.configuration(name, refused) }
            }
            for accepted in ["0", "1", "1000000"] { _ = try Self.configuration(name, accepted) }
        }
        #expect(try Self.configuration("LOCIFY_RATE_LIMIT_PER_SECOND", "0.001").rateLimitPerSecond == 0.001)
    }

    @Test("an exhausted bucket with a tiny rate answers a Retry-After of a day instead of trapping; a look takes no token")
    func tinyRateDoesNotTrap() throws {
        let clock = ManualClock<Double>(1000)
        let limiter = try #require(RateLimiter(ratePerSecond: 1e-20, burst: 2, clock: clock.monotonic))
        #expect(limiter.retryAfter("a") == nil)
        #expect(limiter.admit("a") == nil)
        #expect(limiter.admit("a") == nil)
        #expect(limiter.retryAfter("a") == RateLimiter.maximumRetryAfterSeconds)
        #expect(limiter.admit("a") == RateLimiter.maximumRetryAfterSeconds)
        let normal = try #require(RateLimiter(ratePerSecond: 0.5, burst: 1, clock: clock.monotonic))
        #expect(normal.admit("b") == nil)
        #expect(normal.retryAfter("b") == 2)
        clock.advance(by: 2)
        #expect(normal.retryAfter("b") == nil)
        #expect(normal.admit("b") == nil)
    }

    @Test("the server refuses to start, in one line, when the hard open-file limit cannot cover LOCIFY_MAX_CONNECTIONS")
    func openFileLimitRefused() throws {
        var limit = rlimit()
        #expect(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0)
        let tooMany = min(1_000_000, Int(clamping: limit.rlim_max) + 1)
        try #require(tooMany > Int(clamping: limit.rlim_max), "the hard limit is too high to exceed")
        // Refused before the database is touched: this URL is never dialled.
        let result = try HostileConfigurationTests.refusedStart(
            databaseURL: "postgres://locify@127.0.0.1:1/locify", ["LOCIFY_MAX_CONNECTIONS": String(tooMany)])
        HostileConfigurationTests.expectOneClearLine(result, mentions: ["LOCIFY_MAX_CONNECTIONS", "ulimit -Hn", "refusing to start"])
    }

    /// Issue 35 item 6: on a machine whose hard limit is 1,000 open files (a container's, say), the
    /// default of 10,000 connections cannot fit: the server starts with what fits and says so; a
    /// number the operator set that cannot fit still refuses the start.
    @Test("under a hard open-file limit of 1,000 the default connection limit is sized to it with a warning; a set LOCIFY_MAX_CONNECTIONS that cannot fit is refused")
    func openFileLimitSizesTheDefault() throws {
        let database = try TestDatabase.create(migrationsDirectory: ProjectPaths.migrations, poolSize: 2)
        defer { try? database.drop() }
        let server = try ServerProcess.start(databaseURL: database.connectionString, openFileLimit: 1000)
        defer { server.killHard() }
        #expect(try server.request("GET", "/health").status == 200)
        let warnings = server.logLines.filter { $0["level"] == "warning" && ($0["msg"]?.stringValue ?? "").contains("ulimit -Hn") }
        #expect(warnings.count == 1, "\(server.logText)")
        #expect(warnings.first?["LOCIFY_MAX_CONNECTIONS"]?.stringValue.flatMap(Int.init).map { $0 > 800 && $0 < 1000 } == true)

        let refused = try HostileConfigurationTests.refusedStart(
            databaseURL: "postgres://locify@127.0.0.1:1/locify", ["LOCIFY_MAX_CONNECTIONS": "10000"], openFileLimit: 1000)
        HostileConfigurationTests.expectOneClearLine(refused, mentions: ["LOCIFY_MAX_CONNECTIONS", "ulimit -Hn", "refusing to start"])
    }

    /// Forged tokens (the right `kid`, signed with another key: each costs a signature check)
    /// from 127.0.0.2, whose bucket holds 5 refusals and refills once in about 17 minutes.
    @Test("a request from an address whose bucket is empty is answered 429 before its token is verified; a token verified before still passes")
    func bucketBeforeVerification() throws {
        let server = try TestServer.start(configure: {
            $0.addressRateLimitPerSecond = 0.001
            $0.addressRateLimitBurst = 5
        })
        defer { server.stop() }
        let verifier = server.application.verifier
        func forged(_ index: Int) throws -> String {
            try server.minter.sign(
                header: server.minter.header(),
                claims: server.minter.claims(uid: "forger-\(index)", issuedAt: Date().timeIntervalSince1970),
                signature: .rs256(TestKeys.attacker))
        }
        func status(from source: String, token: String) throws -> Int {
            let client = try RawHTTPClient(port: server.port, sourceHost: source)
            try client.send("GET /v1/users/me HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\n\r\n")
            return try client.readResponse(timeout: .seconds(10)).status
        }
        // A user signs in from 127.0.0.1 first: the token is verified once.
        let user = try server.token(for: "bucket-user")
        #expect(try status(from: "127.0.0.1", token: user) == 200)

        let checksBefore = verifier.signatureVerificationCount
        let refused = try (0..<5).map { try status(from: "127.0.0.2", token: forged($0)) }
        #expect(refused == [401, 401, 401, 401, 401])
        #expect(verifier.signatureVerificationCount == checksBefore + 5)
        let limited = try (5..<25).map { try status(from: "127.0.0.2", token: forged($0)) }
        #expect(limited == Array(repeating: 429, count: 20))
        #expect(verifier.signatureVerificationCount == checksBefore + 5, "no signature checked once the bucket is empty")

        // Behind the same address: a token verified before passes; a new one waits for the bucket.
        #expect(try status(from: "127.0.0.2", token: user) == 200)
        #expect(try status(from: "127.0.0.2", token: server.token(for: "bucket-newcomer")) == 429)
        // Another address has its own bucket.
        #expect(try status(from: "127.0.0.3", token: forged(99)) == 401)
    }
}
