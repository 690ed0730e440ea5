import FoundationEssentials
import Glibc
import Synchronization

/// A token bucket per key (a user, or a client address; openapi.yaml): `burst` requests
/// at once, refilled at `ratePerSecond`. One lock guards every bucket; idle buckets are dropped
/// now and then, and past `maxKeys` new keys share one overflow bucket, so the table stays bounded
/// whatever keys clients make up.
final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: Double
    }

    private struct State {
        var buckets: [String: Bucket] = [:]
        var lastSweep: Double = 0
    }

    let ratePerSecond: Double
    let burst: Double
    /// Most buckets kept; keys beyond share one.
    let maxKeys: Int
    private let now: @Sendable () -> Double
    private let state = Mutex(State())

    /// nil when limiting is off (either value 0).
    init?(
        ratePerSecond: Double, burst: Double, maxKeys: Int = 1_000_000,
        now: @escaping @Sendable () -> Double = RateLimiter.monotonicSeconds
    ) {
        guard ratePerSecond > 0, burst > 0 else { return nil }
        self.ratePerSecond = ratePerSecond
        self.burst = max(burst, 1)
        self.maxKeys = max(maxKeys, 1)
        self.now = now
    }

    /// The key every new key shares once `maxKeys` buckets exist (not a valid user id or address).
    static let overflowKey = "\u{0}overflow"

    /// Takes one token for `key`; when none is left, the whole seconds until one will be.
    func admit(_ key: String) -> Int? {
        let now = self.now()
        return state.withLock { state in
            if now - state.lastSweep > 60 || (state.buckets.count >= maxKeys && now - state.lastSweep > 1) {
                sweep(&state, now: now)
            }
            var bucketKey = key
            if state.buckets[bucketKey] == nil, state.buckets.count >= maxKeys { bucketKey = Self.overflowKey }
            var bucket = state.buckets[bucketKey] ?? Bucket(tokens: burst, updated: now)
            bucket.tokens = min(burst, bucket.tokens + (now - bucket.updated) * ratePerSecond)
            bucket.updated = now
            defer { state.buckets[bucketKey] = bucket }
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                return nil
            }
            return max(1, Int(((1 - bucket.tokens) / ratePerSecond).rounded(.up)))
        }
    }

    /// Drops buckets that have refilled completely: they are indistinguishable from new ones.
    private func sweep(_ state: inout State, now: Double) {
        state.lastSweep = now
        let full = burst / ratePerSecond
        state.buckets = state.buckets.filter { now - $0.value.updated < full }
    }

    static func monotonicSeconds() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }
}
