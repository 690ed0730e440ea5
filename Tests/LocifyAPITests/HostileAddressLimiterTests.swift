import Primitives
import HTTPServer
import Testing

@testable import LocifyAPI

/// The per-address bucket of refused requests (issue 13 item 8): its key and its bounded table.
@Suite("Hostile input: the per-address limiter's keys and table stay bounded")
struct HostileAddressLimiterTests {
    @Test("an IPv4 peer is keyed by its address, an IPv6 peer by its /64")
    func addressKeys() {
        #expect(ClientAddress.key("203.0.113.7:51234") == "203.0.113.7")
        #expect(ClientAddress.key("[2001:db8:1:2:aaaa::1]:443") == "2001:db8:1:2::/64")
        #expect(ClientAddress.key("[2001:db8:1:2:bbbb:cccc:dddd:eeee]:80") == "2001:db8:1:2::/64")
        #expect(ClientAddress.key("[2001:db8:1:3::1]:80") == "2001:db8:1:3::/64")
        #expect(ClientAddress.key("[::1]:8080") == "::1")
        #expect(ClientAddress.key("[::ffff:192.0.2.1]:80") == "::ffff:192.0.2.1")
    }

    @Test("past maxKeys new keys share one bucket, so made-up addresses cannot grow the table")
    func boundedTable() throws {
        let clock = MonotonicClock { .seconds(1000) }
        let limiter = try #require(RateLimiter(ratePerSecond: 1, burst: 2, maxKeys: 3, clock: clock))
        for key in ["a", "b", "c"] { #expect(limiter.admit(key) == nil) }
        // Keys 4, 5, 6... all land in the overflow bucket: two admitted, then refused.
        #expect(limiter.admit("d") == nil)
        #expect(limiter.admit("e") == nil)
        #expect(limiter.admit("f") != nil)
        // Known keys keep their own buckets.
        #expect(limiter.admit("a") == nil)
        #expect(limiter.admit("a") != nil)
    }
}
