import Foundation
import Testing
import TestSupport
import TestSupportServer

/// The ID-token key cache inside the running server (docs/ARCHITECTURE.md section 6): it fetches Google's
/// certificates once at start, keeps them for the endpoint's `max-age`, refreshes them after,
/// keeps serving the last good keys when a refresh fails, and refetches for unknown kids at most
/// once per interval. Each request below uses a token not seen before, so the verified-token
/// cache cannot hide the key cache.
@Suite("Authentication: Google's public keys in the running server")
struct AuthKeyCacheTests {
    /// Starts a server whose key endpoint sends `maxAge` and whose key cache reads `clock`, and
    /// waits until its start-up fetch is under way (that fetch holds the cache's fetch lock, so no
    /// request fetches a second time).
    static func startServer(maxAge: Int, clock: ManualClock<Double> = ManualClock(Date().timeIntervalSince1970)) throws
        -> TestServer
    {
        let server = try TestServer.start(.inProcess, 
            dependencies: { $0.wallClock = clock.wallClock }, google: { $0.certificatesMaxAge = maxAge })
        guard eventually(timeout: .seconds(30), { server.fake.requestCount(.certificates) >= 1 }) else {
            server.stop()
            throw AuthTestError("the server never fetched the certificates at start")
        }
        return server
    }

    @Test("keys are reused for their max-age without refetching")
    func keysReusedWithinMaxAge() throws {
        let server = try Self.startServer(maxAge: 3600)
        defer { server.stop() }
        for index in 0..<8 {
            #expect(try server.request("GET", "/v1/users/me", as: "keys-reused-\(index)").status == 200)
        }
        #expect(server.fake.requestCount(.certificates) == 1)
    }

    @Test("keys are refetched once their max-age has passed")
    func keysRefetchedAfterMaxAge() throws {
        let clock = ManualClock(Date().timeIntervalSince1970)
        let server = try Self.startServer(maxAge: 3600, clock: clock)
        defer { server.stop() }
        #expect(try server.request("GET", "/v1/users/me", as: "keys-expiring-0").status == 200)
        let before = server.fake.requestCount(.certificates)
        #expect(before == 1)
        clock.advance(by: 3601)
        #expect(try server.request("GET", "/v1/users/me", as: "keys-expiring-1").status == 200)
        #expect(eventually { server.fake.requestCount(.certificates) > before })
        #expect(try server.request("GET", "/v1/users/me", as: "keys-expiring-2").status == 200)
    }

    @Test("when the key endpoint fails after the keys expired, the server keeps verifying with the last good keys")
    func lastGoodKeysWhenRefreshFails() throws {
        let clock = ManualClock(Date().timeIntervalSince1970)
        let server = try Self.startServer(maxAge: 3600, clock: clock)
        defer { server.stop() }
        #expect(try server.request("GET", "/v1/users/me", as: "keys-failing-0").status == 200)

        server.fake.certificatesFailing = true
        clock.advance(by: 3601)
        #expect(try server.request("GET", "/v1/users/me", as: "keys-failing-1").status == 200)
        // The refresh was attempted (and failed) ...
        #expect(eventually { server.fake.requestCount(.certificates) >= 2 })
        // ... and requests keep succeeding on the cached keys, never turning into 503.
        for index in 2..<6 {
            let response = try server.request("GET", "/v1/users/me", as: "keys-failing-\(index)")
            #expect(response.status == 200)
        }
        // A token with a kid the cached set lacks is simply invalid, not "keys unavailable".
        let minter = TokenMinter(projectId: TestConstants.projectID, key: TestKeys.secondary)
        let foreign = try server.request(
            "GET", "/v1/users/me", token: minter.token(uid: "keys-failing-x", now: Date().timeIntervalSince1970))
        #expect(foreign.status == 401 && foreign.errorCode == "E005")
    }

    @Test("a flood of tokens with unknown kids causes at most one refetch")
    func unknownKidFlood() throws {
        let server = try Self.startServer(maxAge: 3600)
        defer { server.stop() }
        #expect(try server.request("GET", "/v1/users/me", as: "keys-flood").status == 200)
        let before = server.fake.requestCount(.certificates)
        let minter = TokenMinter(projectId: TestConstants.projectID, key: TestKeys.attacker)
        for index in 0..<20 {
            let token = try minter.sign(
                header: minter.header(kid: "forged-kid-\(index)"),
                claims: minter.claims(uid: "keys-flood", issuedAt: Date().timeIntervalSince1970))
            let response = try server.request("GET", "/v1/users/me", token: token)
            #expect(response.status == 401 && response.errorCode == "E005")
        }
        #expect(server.fake.requestCount(.certificates) - before <= 1)
    }
}
