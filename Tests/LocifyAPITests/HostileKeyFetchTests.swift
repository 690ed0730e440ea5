import Foundation
import Testing
import TestSupport
import TestSupportServer

/// Issue 13, item 2: when no Google keys are cached and the key endpoint hangs, requests with
/// forged tokens must not queue one fetch after another on the workers. At most one fetch is in
/// flight, every other request gets 503 S003 with `Retry-After` at once, and the operational
/// endpoints stay fast.
@Suite("Hostile input: one key fetch, not a queue of them")
struct HostileKeyFetchTests {
    @Test("a key endpoint hanging for 30 s: 50 concurrent forged tokens answered 503 S003 at once (long before the hang ends), one fetch, /health fast")
    func hangingKeyEndpoint() throws {
        let server = try TestServer.start(google: { $0.certificatesHang = 30 })
        defer {
            server.fake.releaseHangingRequests()
            server.stop()
        }
        // The start-up fetch is the one in flight (start waited a bounded time for it).
        #expect(eventually(timeout: .seconds(10)) { server.fake.requestCount(.certificates) == 1 })

        let minter = TokenMinter(projectId: TestConstants.projectID, key: TestKeys.attacker)
        let issuedAt = Date().timeIntervalSince1970 - 1
        let tokens = try (0..<50).map { index in
            // Forged: signed with the attacker's key under the kid Google really uses.
            try minter.sign(
                header: minter.header(kid: TestKeys.primary.kid),
                claims: minter.claims(uid: "forger-\(index)", issuedAt: issuedAt))
        }

        // Probe the operational endpoints while the flood runs.
        let flooding = Locked(true)
        let probe = BackgroundThread { () -> [Double] in
            var durations: [Double] = []
            while flooding.value || durations.count < 50 {
                for path in ["/health", "/health/ready"] {
                    let start = Date()
                    let response = try server.request("GET", path)
                    durations.append(Date().timeIntervalSince(start))
                    #expect(response.status == 200, "\(path)")
                }
            }
            return durations
        }

        let answers = Locked<[(status: Int, code: String?, retryAfter: String?, seconds: Double)]>([])
        try runOnThreads(50) { index in
            let start = Date()
            let response = try server.request("GET", "/v1/users/me", token: tokens[index])
            let seconds = Date().timeIntervalSince(start)
            answers.withLock {
                $0.append((response.status, response.errorCode, response.headers["Retry-After"], seconds))
            }
        }
        flooding.withLock { $0 = false }
        let healthDurations = try probe.join(timeout: .seconds(60))

        let all = answers.value
        #expect(all.count == 50)
        for answer in all {
            #expect(answer.status == 503 && answer.code == "S003")
            #expect(answer.retryAfter != nil)
            // The requirement is under 1 s (measured by hand, RELIABILITY.md); a test bound that
            // tight fails on a loaded sanitizer run. 10 s still tells "answered at once" from
            // "waited for the 30 s hang".
            #expect(answer.seconds < 10, "answered after \(answer.seconds) s")
        }
        #expect(server.fake.requestCount(.certificates) == 1)
        let slowest = healthDurations.max() ?? 0
        // The requirement is 100 ms (RELIABILITY.md has the figures); the bound here leaves room
        // for a loaded shared machine and sanitizer builds, and is still below the 30 s hang a
        // queued fetch would cost.
        #expect(slowest < 10, "slowest /health or /health/ready: \(slowest) s")
        print("hanging key endpoint: slowest of 50 forged requests \(all.map(\.seconds).max() ?? 0) s; slowest of \(healthDurations.count) health probes \(slowest) s")
    }
}
