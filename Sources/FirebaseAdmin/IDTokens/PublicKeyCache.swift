import Dispatch
import FoundationEssentials
import HTTPClient
import Logging
import Primitives
import Synchronization

/// Google's ID-token public keys by `kid`, cached as docs/ARCHITECTURE.md section 6 prescribes.
///
/// Honours the response's max-age (5 minutes when absent, at most a day), refreshes in the
/// background shortly before expiry without stalling requests while keys are present, refetches
/// on an unknown kid at most once per interval, keeps serving the last good keys when a refresh
/// fails for at most `expiredKeyGrace` past their lifetime (a key Google withdrew must not verify
/// tokens for ever while its endpoint is unreachable), and reports `keysUnavailable` only when no
/// usable key is cached.
///
/// Fetches never queue up: at most one is in flight, on a thread of the cache's own, and after a
/// failure none starts for `retryAfterFailure` seconds. The caller whose lookup started a fetch
/// waits for it at most `fetchWait`; every other caller answers at once (a slow or hanging key
/// endpoint costs a request a bounded wait, never a worker for the endpoint's timeout).
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
        /// How long the lookup that starts a fetch waits for it; others never wait. Default 0.5 s.
        public var fetchWait: Double
        /// Longest lifetime granted to a key set, whatever max-age the endpoint sends. Default 86,400 s.
        public var maximumMaxAge: Double
        /// How long past its lifetime a key set is still used while every refresh fails; then
        /// tokens are refused with `keysUnavailable` (503) until a refresh succeeds. Default 3,600 s
        /// (docs/ARCHITECTURE.md, section 6).
        public var expiredKeyGrace: Double

        /// A configuration with the defaults documented on each property; tests shorten them.
        public init(
            defaultMaxAge: Double = 300, unknownKeyRefetchInterval: Double = 60, refreshAhead: Double = 60,
            retryAfterFailure: Double = 10, fetchWait: Double = 0.5, maximumMaxAge: Double = 86_400,
            expiredKeyGrace: Double = 3600
        ) {
            self.defaultMaxAge = defaultMaxAge
            self.unknownKeyRefetchInterval = unknownKeyRefetchInterval
            self.refreshAhead = refreshAhead
            self.retryAfterFailure = retryAfterFailure
            self.fetchWait = fetchWait
            self.maximumMaxAge = maximumMaxAge
            self.expiredKeyGrace = expiredKeyGrace
        }
    }

    /// One fetch: waiters block on `done` (entered at creation, left when the fetch ends).
    private final class Fetch: Sendable {
        let done = DispatchGroup()
        /// Why the fetch failed; nil while running or after success.
        let failure = Mutex<String?>(nil)

        init() { done.enter() }

        /// Waits up to `seconds`; true when the fetch has ended.
        func wait(seconds: Double) -> Bool {
            guard seconds > 0 else { return false }
            return done.wait(timeout: .now() + .nanoseconds(Int(min(seconds, 3600) * 1e9))) == .success
        }
    }

    private struct State {
        var keys: [String: RSAPublicKey] = [:]
        var fetchedAt: Double = 0
        var expiresAt: Double = 0
        var inFlight: Fetch?
        var lastUnknownKeyFetch: Double?
        var noAttemptBefore: Double = -Double.infinity
        var fetches = 0

        /// The cached keys while they may be used at `time` (within their lifetime plus `grace`);
        /// nil when there are none or they are past that.
        func usableKeys(at time: Double, grace: Double) -> [String: RSAPublicKey]? {
            keys.isEmpty || time >= expiresAt + grace ? nil : keys
        }
    }

    private enum Decision {
        case found(RSAPublicKey)
        case waitFor(Fetch)
        case refetchForUnknownKey(Fetch)
        case unknown
        case unavailable(String)
    }

    private let source: any CertificateSource
    private let configuration: Configuration
    private let clock: WallClock
    private let logger: Logger
    private let state = Mutex(State())
    /// Runs the fetches, one at a time, off the request workers.
    private let fetchQueue = DispatchQueue(label: "locify.firebase.public-key-fetch")
    private let fetchGroup = DispatchGroup()

    /// A cache reading from `source`; `clock` is the wall clock.
    public init(
        source: any CertificateSource, configuration: Configuration = Configuration(),
        clock: WallClock = .system, logger: Logger
    ) {
        self.source = source
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
    }

    /// How many times the source was asked for certificates (for metrics and tests).
    public var fetchCount: Int { state.withLock { $0.fetches } }

    /// The key ids currently cached.
    public var keyIDs: [String] { state.withLock { Array($0.keys.keys) } }

    /// Fetches the keys now (e.g. at start-up), or joins the fetch in flight, and waits for it
    /// at most `timeout` seconds; throws `keysUnavailable` when it failed or is still running.
    public func prefetch(timeout: Double = 3600) throws(IDTokenError) {
        let fetch = state.withLock { state in state.inFlight ?? startFetch(&state) }
        guard fetch.wait(seconds: timeout) else {
            throw IDTokenError.keysUnavailable("Google's public keys are still being fetched")
        }
        if let failure = fetch.failure.withLock({ $0 }) {
            throw IDTokenError.keysUnavailable("cannot fetch Google's public keys: \(failure)")
        }
    }

    /// The key named `kid`, or nil when Google has no such key. Throws `keysUnavailable` only
    /// when no keys are cached and none arrived within the wait.
    public func publicKey(forKeyID kid: String) throws(IDTokenError) -> RSAPublicKey? {
        let time = clock.seconds()
        let grace = configuration.expiredKeyGrace
        let decision: Decision = state.withLock { state in
            guard let keys = state.usableKeys(at: time, grace: grace) else {
                if state.inFlight != nil {
                    return .unavailable("a fetch of Google's public keys is in progress")
                }
                guard time >= state.noAttemptBefore else {
                    return .unavailable(
                        state.keys.isEmpty
                            ? "Google's public keys are unavailable (a recent fetch failed)"
                            : "Google's public keys expired more than \(Int(grace)) s ago and cannot be refreshed")
                }
                return .waitFor(startFetch(&state))
            }
            let lifetime = max(0, state.expiresAt - state.fetchedAt)
            let refreshFrom = state.expiresAt - min(configuration.refreshAhead, lifetime / 2)
            let mayFetch = state.inFlight == nil && time >= state.noAttemptBefore
            if let key = keys[kid] {
                if time >= refreshFrom, mayFetch { _ = startFetch(&state) }
                return .found(key)
            }
            if let last = state.lastUnknownKeyFetch, time - last < configuration.unknownKeyRefetchInterval {
                return .unknown
            }
            guard mayFetch else { return .unknown }
            state.lastUnknownKeyFetch = time
            return .refetchForUnknownKey(startFetch(&state))
        }

        switch decision {
        case .found(let key):
            return key
        case .unknown:
            return nil
        case .unavailable(let reason):
            throw IDTokenError.keysUnavailable(reason)
        case .waitFor(let fetch):
            let ended = fetch.wait(seconds: configuration.fetchWait)
            if let keys = state.withLock({ $0.usableKeys(at: clock.seconds(), grace: grace) }) { return keys[kid] }
            if ended, let failure = fetch.failure.withLock({ $0 }) {
                throw IDTokenError.keysUnavailable("cannot fetch Google's public keys: \(failure)")
            }
            throw IDTokenError.keysUnavailable("Google's public keys are still being fetched")
        case .refetchForUnknownKey(let fetch):
            _ = fetch.wait(seconds: configuration.fetchWait)
            return state.withLock { $0.usableKeys(at: clock.seconds(), grace: grace)?[kid] }
        }
    }

    /// Blocks until every fetch started so far has finished (tests, shutdown).
    public func waitForBackgroundRefresh() {
        fetchGroup.wait()
    }

    /// Marks a fetch in flight and runs it on the fetch queue. Call inside `state.withLock`
    /// with no fetch in flight.
    private func startFetch(_ state: inout State) -> Fetch {
        let fetch = Fetch()
        state.inFlight = fetch
        state.fetches += 1
        let hadKeys = !state.keys.isEmpty
        fetchQueue.async(group: fetchGroup) { [self] in
            var failure: String?
            do {
                try fetchAndStore()
                logger.debug("fetched Google's public keys")
            } catch {
                failure = "\(error)"
                if hadKeys {
                    logger.warning(
                        "refresh of Google's public keys failed; keeping the last good keys", metadata: ["error": "\(error)"])
                } else {
                    logger.error("cannot fetch Google's public keys", metadata: ["error": "\(error)"])
                }
            }
            let time = clock.seconds()
            fetch.failure.withLock { $0 = failure }
            self.state.withLock { state in
                if failure != nil { state.noAttemptBefore = time + configuration.retryAfterFailure }
                state.inFlight = nil
            }
            fetch.done.leave()
        }
        return fetch
    }

    /// Fetches, parses every certificate and replaces the cached set. Runs on the fetch queue.
    private func fetchAndStore() throws {
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
        var lifetime = set.maxAge ?? configuration.defaultMaxAge
        if !lifetime.isFinite || lifetime < 0 { lifetime = configuration.defaultMaxAge }
        lifetime = min(lifetime, configuration.maximumMaxAge)
        let time = clock.seconds()
        state.withLock { state in
            state.keys = keys
            state.fetchedAt = time
            state.expiresAt = time + lifetime
            state.noAttemptBefore = -Double.infinity
        }
    }
}
