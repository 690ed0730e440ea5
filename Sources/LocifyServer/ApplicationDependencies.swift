import FoundationEssentials
import HTTPClient
import HTTPServer
import LocifyJobs
import LocifyRules
import Postgres
import Primitives

/// What tests (and only tests) replace when building the application.
public struct ApplicationDependencies: Sendable {
    /// How Google is reached (certificates, OAuth, Storage, Identity Toolkit).
    public var googleTransport: any HTTPTransport = SocketHTTPTransport()
    /// Timing of the clean-up worker.
    public var cleanupSettings = CleanupWorker.Settings()
    /// Whether the clean-up worker, the tombstone purge and the cascade worker run (they are built
    /// either way). Each reads `users`, `categories` or `cleanup_jobs` when it starts, when woken and
    /// every interval: the tests that count a request's table reads turn them off.
    public var runsBackgroundWorkers = true
    /// The one wall clock: the records' stamps, the ID tokens' `exp`/`iat`, the key cache's
    /// `max-age`, the access tokens' lifetimes and Google's `Retry-After` dates (tests move it
    /// instead of sleeping, and mint their tokens on it).
    public var wallClock: WallClock = .system
    /// The monotonic clock of every part that measures time: the HTTP server's timeouts, the
    /// rate limits, the readiness cache, request durations (tests move it by hand).
    public var monotonicClock: MonotonicClock = .system
    /// Adjusts the HTTP server's configuration (tests shorten timeouts; a test may give the HTTP
    /// server a clock of its own there).
    public var configureHTTP: @Sendable (inout HTTPServerConfiguration) -> Void = { _ in }
    /// Where `/openapi.yaml` is read from. Default `openapi.yaml` in the working directory.
    public var openAPIPath = "openapi.yaml"
    /// Timing of the connection that listens for change notifications (tests shorten it).
    public var listenTiming = PostgresListener.Timing()

    /// The production dependencies: real Google transport and clock, default worker timing, no
    /// HTTP adjustments, `openapi.yaml` in the working directory.
    public init() {}
}
