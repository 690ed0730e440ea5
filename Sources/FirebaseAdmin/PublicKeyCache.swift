import Dispatch
import Foundation
import Logging
import Synchronization

/// Google's ID-token public keys by `kid`, cached as FIREBASE.md §2 prescribes.
///
/// Honours the response's max-age (5 minutes when absent), refreshes in the background shortly
/// before expiry without stalling requests while keys are present, refetches on an unknown kid at
/// most once per interval, keeps serving the last good keys when a refresh fails, and reports
/// `keysUnavailable` only when nothing is cached and a fetch fails.
public final class PublicKeyCache: Sendable {
    /// Tuning of the cache; all durations in seconds.
    public struct Configuration: Sendable {
        /// Lifetime of a key set whose response had no max-age. Default 300 s.
        public var defaultMaxAge: Double
        /// Minimum time between refetches caused by an unknown kid. Default 60 s.
        public var unknownKeyRefetchInterval: Double
        /// How long before expiry the background refresh starts (at most half the lifetime). Default 60 s.
        public var refreshAhead: Double
        /// Pause after a failed fetch before the next attempt. Default 10 s.
        public var retryAfterFailure: Double

        public init(
            defaultMaxAge: Double = 300, unknownKeyRefetchInterval: Double = 60, refreshAhead: Double = 60,
            retryAfterFailure: Double = 10
        ) {
            self.defaultMaxAge = defaultMaxAge
            self.unknownKeyRefetchInterval = unknownKeyRefetchInterval
            self.refreshAhead = refreshAhead
            self.retryAfterFailure = retryAfterFailure
        }
    }

    private struct State {
        var keys: [String: RSAPublicKey] = [:]
        var fetchedAt: Double = 0
        var expiresAt: Double = 0
        var refreshInFlight = false
        var lastUnknownKeyFetch: Double?
        var noAttemptBefore: Double = -Double.infinity
        var fetches = 0
    }

    private enum Decision {
        case found(RSAPublicKey)
        case fetchNow
        case refetchForUnknownKey
        case unknown
        case unavailable
    }

    private let source: any CertificateSource
    private let configuration: Configuration
    private let now: @Sendable () -> Double
    private let logger: Logger
    private let state = Mutex(State())
    /// Serialises blocking fetches so concurrent callers share one request.
    private let fetchLock = Mutex(())
    private let refreshQueue = DispatchQueue(label: "locify.firebase.public-key-refresh")
    private let refreshGroup = DispatchGroup()

    /// A cache reading from `source`; `now` is the clock in unix seconds.
    public init(
        source: any CertificateSource, configuration: Configuration = Configuration(),
        now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }, logger: Logger
    ) {
        self.source = source
        self.configuration = configuration
        self.now = now
        self.logger = logger
    }

    /// How many times the source was asked for certificates (for metrics and tests).
    public var fetchCount: Int { state.withLock { $0.fetches } }

    /// The key ids currently cached.
    public var keyIDs: [String] { state.withLock { Array($0.keys.keys) } }

    /// Fetches the keys now (e.g. at start-up); throws `keysUnavailable` when that fails.
    public func prefetch() throws(IDTokenError) {
        try fetchLock.withLock { _ throws(IDTokenError) in
            do {
                try fetchAndStore()
            } catch {
                recordFailure()
                throw IDTokenError.keysUnavailable("cannot fetch Google's public keys: \(error)")
            }
        }
    }

    /// The key named `kid`, or nil when Google has no such key. Throws `keysUnavailable` only
    /// when no keys are cached and they cannot be fetched.
    public func publicKey(forKeyID kid: String) throws(IDTokenError) -> RSAPublicKey? {
        let time = now()
        var startRefresh = false
        let decision: Decision = state.withLock { state in
            if state.keys.isEmpty {
                return time >= state.noAttemptBefore ? .fetchNow : .unavailable
            }
            let lifetime = max(0, state.expiresAt - state.fetchedAt)
            let refreshFrom = state.expiresAt - min(configuration.refreshAhead, lifetime / 2)
            if time >= refreshFrom, !state.refreshInFlight, time >= state.noAttemptBefore {
                state.refreshInFlight = true
                startRefresh = true
            }
            if let key = state.keys[kid] { return .found(key) }
            if let last = state.lastUnknownKeyFetch, time - last < configuration.unknownKeyRefetchInterval {
                return .unknown
            }
            state.lastUnknownKeyFetch = time
            return .refetchForUnknownKey
        }
        if startRefresh { scheduleBackgroundRefresh() }

        switch decision {
        case .found(let key):
            return key
        case .unknown:
            return nil
        case .unavailable:
            throw IDTokenError.keysUnavailable("Google's public keys are unavailable (recent fetch failed)")
        case .fetchNow:
            return try fetchLock.withLock { _ throws(IDTokenError) -> RSAPublicKey? in
                // Another caller may have fetched while this one waited for the lock.
                if let cached = state.withLock({ $0.keys.isEmpty ? nil : $0.keys }) { return cached[kid] }
                do {
                    try fetchAndStore()
                } catch {
                    recordFailure()
                    logger.error("cannot fetch Google's public keys", metadata: ["error": "\(error)"])
                    throw IDTokenError.keysUnavailable("cannot fetch Google's public keys: \(error)")
                }
                return state.withLock { $0.keys[kid] }
            }
        case .refetchForUnknownKey:
            fetchLock.withLock { _ in
                do {
                    try fetchAndStore()
                    logger.info("refetched Google's public keys for an unknown kid")
                } catch {
                    recordFailure()
                    logger.warning(
                        "refetch for an unknown kid failed; keeping the last good keys", metadata: ["error": "\(error)"])
                }
            }
            return state.withLock { $0.keys[kid] }
        }
    }

    /// Blocks until any background refresh started so far has finished (tests, shutdown).
    public func waitForBackgroundRefresh() {
        refreshGroup.wait()
    }

    private func scheduleBackgroundRefresh() {
        refreshQueue.async(group: refreshGroup) { [self] in
            fetchLock.withLock { _ in
                do {
                    try fetchAndStore()
                    logger.debug("refreshed Google's public keys in the background")
                } catch {
                    recordFailure()
                    logger.warning(
                        "background refresh of Google's public keys failed; keeping the last good keys",
                        metadata: ["error": "\(error)"])
                }
            }
            state.withLock { $0.refreshInFlight = false }
        }
    }

    private func recordFailure() {
        let time = now()
        state.withLock { $0.noAttemptBefore = time + configuration.retryAfterFailure }
    }

    /// Fetches, parses every certificate and replaces the cached set. Call with `fetchLock` held.
    private func fetchAndStore() throws {
        state.withLock { $0.fetches += 1 }
        let set = try source.fetchCertificates()
        var keys: [String: RSAPublicKey] = [:]
        for (kid, pem) in set.certificates {
            do {
                keys[kid] = try RSAPublicKey(certificatePEM: pem)
            } catch {
                logger.warning("skipping an unreadable Google certificate", metadata: ["kid": "\(kid)", "error": "\(error)"])
            }
        }
        guard !keys.isEmpty else { throw TransportError("the certificate endpoint returned no usable RSA key") }
        let lifetime = max(0, set.maxAge ?? configuration.defaultMaxAge)
        let time = now()
        state.withLock { state in
            state.keys = keys
            state.fetchedAt = time
            state.expiresAt = time + lifetime
            state.noAttemptBefore = -Double.infinity
        }
    }
}
