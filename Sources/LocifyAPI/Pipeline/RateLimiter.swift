import FoundationEssentials
import Primitives
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
    private let clock: MonotonicClock
    private let state = Mutex(State())

    /// nil when limiting is off (either value 0).
    init?(ratePerSecond: Double, burst: Double, maxKeys: Int = 1_000_000, clock: MonotonicClock) {
        guard ratePerSecond > 0, burst > 0 else { return nil }
        self.ratePerSecond = ratePerSecond
        self.burst = max(burst, 1)
        self.maxKeys = max(maxKeys, 1)
        self.clock = clock
    }

    /// The key every new key shares once `maxKeys` buckets exist (not a valid user id or address).
    static let overflowKey = "\u{0}overflow"

    /// Takes one token for `key`; when none is left, the whole seconds until one will be.
    func admit(_ key: String) -> Int? {
        take(key, count: 1)
    }

    /// Whether `key`'s bucket is empty, without taking a token: nil while it has one left, else
    /// the whole seconds until it will.
    func retryAfter(_ key: String) -> Int? {
        take(key, count: 0)
    }

    /// The longest `Retry-After` answered, seconds (a day): however small the rate, the answer
    /// stays a sensible number.
    static let maximumRetryAfterSeconds = 86_400

    private func take(_ key: String, count: Double) -> Int? {
        let now = clock.seconds()
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
                bucket.tokens -= count
                return nil
            }
            let seconds = ((1 - bucket.tokens) / ratePerSecond).rounded(.up)
            return seconds < Double(Self.maximumRetryAfterSeconds) ? max(1, Int(seconds)) : Self.maximumRetryAfterSeconds
        }
    }

    /// Drops buckets that have refilled completely: they are indistinguishable from new ones.
    private func sweep(_ state: inout State, now: Double) {
        state.lastSweep = now
        let full = burst / ratePerSecond
        state.buckets = state.buckets.filter { now - $0.value.updated < full }
    }
}
