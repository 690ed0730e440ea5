import Primitives
import Foundation
import JSON
import Synchronization
import Testing
import TestSupport
import TestSupportServer

@testable import LocifyAPI

/// The per-user token bucket on its own, with a hand-driven clock (openapi.yaml).
@Suite("Rate limiter: a token bucket per user")
struct RateLimiterTests {
    @Test("a full bucket admits `burst` requests at once, then refuses with the seconds until a token")
    func burstThenRefusal() throws {
        let clock = ManualClock<Double>()
        let limiter = try #require(RateLimiter(ratePerSecond: 2, burst: 5, clock: clock.monotonic))
        for _ in 0..<5 { #expect(limiter.admit("alice") == nil) }
        // Empty bucket, 2 tokens/s: the next token is half a second away, rounded up to 1 s.
        #expect(limiter.admit("alice") == 1)
        clock.advance(by: 0.5)
        #expect(limiter.admit("alice") == nil)
        #expect(limiter.admit("alice") == 1)
    }

    @Test("Retry-After is the whole seconds until the next token, never 0")
    func retryAfterSeconds() throws {
        let clock = ManualClock<Double>()
        let limiter = try #require(RateLimiter(ratePerSecond: 0.25, burst: 1, clock: clock.monotonic))
        #expect(limiter.admit("alice") == nil)
        #expect(limiter.admit("alice") == 4)
        clock.advance(by: 1.5)
        #expect(limiter.admit("alice") == 3)
        clock.advance(by: 2.4)
        #expect(limiter.admit("alice") == 1)
        clock.advance(by: 0.1)
        #expect(limiter.admit("alice") == nil)
    }

    @Test("the bucket refills at the rate, up to the burst and no further")
    func refill() throws {
        let clock = ManualClock<Double>()
        let limiter = try #require(RateLimiter(ratePerSecond: 10, burst: 3, clock: clock.monotonic))
        for _ in 0..<3 { #expect(limiter.admit("alice") == nil) }
        #expect(limiter.admit("alice") != nil)
        clock.advance(by: 3600)
        for _ in 0..<3 { #expect(limiter.admit("alice") == nil) }
        #expect(limiter.admit("alice") != nil, "an idle hour refills to the burst, not beyond")
    }

    @Test("each user has a bucket of their own")
    func perUser() throws {
        let clock = ManualClock<Double>()
        let limiter = try #require(RateLimiter(ratePerSecond: 1, burst: 2, clock: clock.monotonic))
        #expect(limiter.admit("alice") == nil)
        #expect(limiter.admit("alice") == nil)
        #expect(limiter.admit("alice") != nil)
        #expect(limiter.admit("bob") == nil)
        #expect(limiter.admit("bob") == nil)
        #expect(limiter.admit("bob") != nil)
    }

    @Test("a rate or a burst of 0 turns limiting off")
    func disabled() {
        #expect(RateLimiter(ratePerSecond: 0, burst: 100, clock: .system) == nil)
        #expect(RateLimiter(ratePerSecond: 20, burst: 0, clock: .system) == nil)
        #expect(RateLimiter(ratePerSecond: 20, burst: 100, clock: .system) != nil)
    }

    @Test("idle buckets are forgotten without giving anyone more than a full bucket")
    func sweep() throws {
        let clock = ManualClock<Double>()
        let limiter = try #require(RateLimiter(ratePerSecond: 1, burst: 2, clock: clock.monotonic))
        #expect(limiter.admit("alice") == nil)
        #expect(limiter.admit("alice") == nil)
        clock.advance(by: 61)
        // The sweep ran (more than 60 s passed); alice's refilled bucket is indistinguishable from a new one.
        #expect(limiter.admit("bob") == nil)
        #expect(limiter.admit("alice") == nil)
        #expect(limiter.admit("alice") == nil)
        #expect(limiter.admit("alice") != nil)
    }
}

/// Rate limiting through the whole server: 429 S001 with `Retry-After` (openapi.yaml).
@Suite("Rate limiting end to end")
struct RateLimitTests {
    /// A server whose buckets hold `burst` requests and refill at `rate` per second: in process,
    /// or `overSockets` for requests on a keep-alive connection.
    private func server(rate: Double, burst: Double, overSockets: Bool = false) throws -> TestServer {
        let configure = { (configuration: inout Configuration) in
            configuration.rateLimitPerSecond = rate
            configuration.rateLimitBurst = burst
        }
        return try TestServer.start(overSockets ? .sockets : .inProcess, configure: configure)
    }

    @Test("past the burst a user gets 429 S001 with Retry-After in whole seconds")
    func tooManyRequests() throws {
        // One token per 100 s: nothing refills during the test, however slow the machine.
        let server = try server(rate: 0.01, burst: 3)
        defer { server.stop() }
        let token = try server.token(for: "rate-alice")
        for _ in 0..<3 {
            #expect(try server.request("GET", "/v1/categories", token: token).status == 200)
        }
        let refused = try server.request("GET", "/v1/categories", token: token)
        #expect(refused.status == 429)
        #expect(refused.errorCode == "S001")
        #expect(refused.headers["Content-Type"] == "application/json; charset=utf-8")
        #expect(refused.headers["X-Request-Id"] != nil)
        let retryAfter = try #require(refused.headers["Retry-After"].flatMap { Int($0) })
        #expect((1...100).contains(retryAfter))
        // Every /v1 route draws from the same bucket.
        #expect(try server.request("POST", "/v1/sync/push", token: token, json: ["changes": []]).status == 429)
        #expect(try server.request("GET", "/v1/users/me", token: token).status == 429)
    }

    @Test("the limit is per user: another user is not affected")
    func perUser() throws {
        let server = try server(rate: 0.01, burst: 2)
        defer { server.stop() }
        let alice = try server.token(for: "rate-alice")
        let bob = try server.token(for: "rate-bob")
        for _ in 0..<2 { #expect(try server.request("GET", "/v1/info", token: alice).status == 200) }
        #expect(try server.request("GET", "/v1/info", token: alice).status == 429)
        for _ in 0..<2 { #expect(try server.request("GET", "/v1/info", token: bob).status == 200) }
        #expect(try server.request("GET", "/v1/info", token: bob).status == 429)
    }

    @Test("a refused user is told to retry after the whole seconds until a token refills")
    func retryAfterOnRefusal() throws {
        let server = try server(rate: 1, burst: 1)
        defer { server.stop() }
        let token = try server.token(for: "rate-refill")
        var refused: TestResponse?
        for _ in 0..<50 {
            let response = try server.request("GET", "/v1/info", token: token)
            if response.status == 429 {
                refused = response
                break
            }
            #expect(response.status == 200)
        }
        let retryAfter = try #require(refused?.headers["Retry-After"].flatMap { Int($0) })
        #expect(retryAfter == 1)
        // Admission again after Retry-After is the limiter's refill, proven on a hand-driven clock
        // by RateLimiterTests (burstThenRefusal, retryAfterSeconds) instead of a real-time sleep.
    }

    @Test("a rate of 0 or a burst of 0 turns limiting off")
    func off() throws {
        for (rate, burst) in [(0.0, 100.0), (20.0, 0.0)] {
            let server = try server(rate: rate, burst: burst, overSockets: true)
            defer { server.stop() }
            let token = try server.token(for: "rate-off")
            let client = try RawHTTPClient(port: server.port)
            defer { client.close() }
            // More requests than the default burst, on one keep-alive connection.
            for _ in 0..<120 {
                try client.send("GET /v1/info HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\n\r\n")
                #expect(try client.readResponse().status == 200)
            }
        }
    }

    @Test("/health, /health/ready, /metrics and /openapi.yaml are never rate limited")
    func operationalEndpointsExempt() throws {
        let server = try server(rate: 0.01, burst: 1)
        defer { server.stop() }
        let token = try server.token(for: "rate-ops")
        #expect(try server.request("GET", "/v1/info", token: token).status == 200)
        #expect(try server.request("GET", "/v1/info", token: token).status == 429)
        for path in ["/health", "/health/ready", "/metrics", "/openapi.yaml"] {
            for _ in 0..<5 {
                // Even with the exhausted user's token.
                #expect(try server.request("GET", path, token: token).status == 200, "\(path)")
                #expect(try server.request("GET", path).status == 200, "\(path)")
            }
        }
    }

    @Test("refused requests are counted in http_requests_total with status 429")
    func countedInMetrics() throws {
        let server = try server(rate: 0.01, burst: 1)
        defer { server.stop() }
        let token = try server.token(for: "rate-metrics")
        _ = try server.request("GET", "/v1/info", token: token)
        for _ in 0..<2 { #expect(try server.request("GET", "/v1/info", token: token).status == 429) }
        let metrics = try PrometheusText(try server.request("GET", "/metrics").text)
        #expect(metrics.value("http_requests_total", ["method": "GET", "route": "/v1/info", "status": "429"]) == 2)
    }
}
