import FirebaseAdmin
import FoundationEssentials
import HTTPClient
import HTTPServer
import Locify
import LocifyJobs
import LocifyRules
import Logging
import Postgres
import Primitives

/// What tests (and only tests) replace when building the application.
public struct ApplicationDependencies: Sendable {
    /// How Google is reached (certificates, OAuth, Storage, Identity Toolkit).
    public var googleTransport: any HTTPTransport = SocketHTTPTransport()
    /// Timing of the clean-up worker.
    public var cleanupSettings = CleanupWorker.Settings()
    /// The server clock for records.
    public var now: @Sendable () -> Timestamp = Timestamp.now
    /// The clock, in unix seconds, on which the ID-token keys' `max-age` and the access tokens'
    /// lifetimes run out (tests move it instead of sleeping).
    public var googleClock: @Sendable () -> Double = { Date().timeIntervalSince1970 }
    /// Adjusts the HTTP server's configuration (tests shorten timeouts).
    public var configureHTTP: @Sendable (inout HTTPServerConfiguration) -> Void = { _ in }
    /// Where `/openapi.yaml` is read from. Default `openapi.yaml` in the working directory.
    public var openAPIPath = "openapi.yaml"
    /// Timing of the connection that listens for change notifications (tests shorten it).
    public var listenTiming = PostgresListener.Timing()

    /// The production dependencies: real Google transport and clock, default worker timing, no
    /// HTTP adjustments, `openapi.yaml` in the working directory.
    public init() {}
}

/// The assembled server: HTTP front, database pool, domain services and background workers.
public final class Application: Sendable {
    /// The HTTP server; it listens once `start` has run.
    public let server: HTTPServer
    /// The database pool requests run on (the background workers have a small pool of their own).
    public let pool: ConnectionPool
    /// The worker running the durable Google clean-up jobs, started and stopped with the server.
    public let cleanupWorker: CleanupWorker
    /// The route table: every (method, path pattern) the server answers (HEAD implied by GET).
    public let routes: [(method: HTTPMethod, pattern: String)]
    let workerPool: ConnectionPool
    let purger: TombstonePurger
    let keyCache: PublicKeyCache?
    /// The ID-token verifier of every request (tests count its signature checks).
    let verifier: IDTokenVerifier
    let shutdownGrace: Duration
    let shutdownDelay: Duration
    let readiness: Readiness
    let logger: Logger
    /// Wakes long-poll pulls when a change of their user commits; nil when long-poll is off.
    let liveChanges: LiveChanges?

    init(
        server: HTTPServer, pool: ConnectionPool, workerPool: ConnectionPool, cleanupWorker: CleanupWorker,
        routes: [(method: HTTPMethod, pattern: String)], purger: TombstonePurger, keyCache: PublicKeyCache?,
        verifier: IDTokenVerifier, shutdownGrace: Duration, shutdownDelay: Duration, readiness: Readiness,
        liveChanges: LiveChanges?, logger: Logger
    ) {
        self.server = server
        self.pool = pool
        self.routes = routes
        self.workerPool = workerPool
        self.cleanupWorker = cleanupWorker
        self.purger = purger
        self.keyCache = keyCache
        self.verifier = verifier
        self.shutdownGrace = shutdownGrace
        self.shutdownDelay = shutdownDelay
        self.readiness = readiness
        self.liveChanges = liveChanges
        self.logger = logger
    }

    /// Longest wait at start-up for Google's ID-token keys, seconds.
    static let keyPrefetchWait: Double = 5

    /// The port the server listens on (after `start`).
    public var port: Int { server.localPort }

    /// The long-poll counts (waiting pulls, wake-ups, notifications, listener reconnects); nil
    /// when long-poll is off.
    public var liveStatistics: LiveChanges.Statistics? { liveChanges?.statistics }

    /// Warms the key cache (at most `keyPrefetchWait` s), then starts listening and the
    /// background work.
    public func start() throws {
        if let keyCache {
            // Warm the key cache before listening, waiting at most `keyPrefetchWait` seconds: a
            // slow or hanging key endpoint delays start-up by that much at most (the fetch goes
            // on in the background; until it ends, requests needing a key get 503 S003).
            do {
                try keyCache.prefetch(timeout: Self.keyPrefetchWait)
            } catch {
                logger.warning("cannot fetch Google's public keys yet", metadata: ["error": "\(error)"])
            }
        }
        // Listening before the first pull can wait (a pull that waits before it listens is woken
        // when it starts listening anyway).
        liveChanges?.start()
        try server.start()
        cleanupWorker.start()
        purger.start()
        logger.info("locify-server listening", metadata: ["port": "\(port)"])
    }

    /// Answers every waiting pull at once (with what the feed had, and `Connection: close`, so its
    /// client asks again, normally of another instance), reports not ready (`/health/ready` 503)
    /// and keeps serving for the shutdown delay, then stops accepting, lets in-flight requests
    /// finish within the grace period (pulls that began waiting meanwhile are answered at once),
    /// stops the background work and closes the database pools.
    public func shutdown() {
        server.answerWaitingRequests()
        let alreadyDraining = readiness.beginDraining()
        if !alreadyDraining && shutdownDelay > .zero {
            logger.info("not ready; serving until the shutdown delay is over", metadata: ["delay_s": "\(shutdownDelay.seconds)"])
            DedicatedThread.sleep(for: shutdownDelay)
        }
        logger.info("shutting down", metadata: ["grace_s": "\(shutdownGrace.seconds)"])
        server.shutdown(gracePeriod: shutdownGrace)
        liveChanges?.stop()
        cleanupWorker.stop()
        purger.stop()
        pool.close()
        workerPool.close()
    }

    /// Blocks until the server has stopped.
    public func waitUntilStopped() {
        server.waitUntilStopped()
    }
}

/// Builds the whole application from its configuration (openapi.yaml): connects to the
/// database and applies pending migrations, sets up token verification (or the Auth emulator),
/// the Google clients for clean-up (or none), the domain services, workers and the HTTP server.
public func buildApplication(
    configuration: Configuration, logger: Logger, dependencies: ApplicationDependencies = ApplicationDependencies()
) throws -> Application {
    // Before anything else (the database is not touched): emulator mode must not reach production,
    // and the open-file limit must allow the connections.
    try configuration.validateEmulatorSafety()
    let http = httpConfiguration(configuration, dependencies: dependencies)
    try raiseOpenFileLimit(for: http)
    var databaseConfiguration = try PostgresConfiguration(connectionString: configuration.databaseURL)
    databaseConfiguration.applicationName = "locify-server"
    // Every statement is prepared once per connection and shaped so that its generic plan is the
    // index plan (see the Store files); without this, PostgreSQL keeps re-planning the listings
    // on every execution (their generic cost estimate assumes LIMIT $n returns 10% of the table),
    // which cost more database CPU than running them.
    databaseConfiguration.sessionSettings["plan_cache_mode"] = "force_generic_plan"
    let pool = ConnectionPool(configuration: databaseConfiguration, size: configuration.databasePoolSize, logger: logger)
    let applied = try runMigrations(configuration: configuration, pool: pool, logger: logger)
    if !applied.isEmpty { logger.info("applied migrations", metadata: ["files": "\(applied.joined(separator: ", "))"]) }

    let keyCache: PublicKeyCache?
    if configuration.authEmulatorHost != nil {
        keyCache = nil
        logger.critical(
            "FIREBASE_AUTH_EMULATOR_HOST is set: unsigned emulator tokens are ACCEPTED. Never run like this in production.")
    } else {
        keyCache = PublicKeyCache(
            source: HTTPCertificateSource(url: configuration.idTokenCertsURL, transport: dependencies.googleTransport),
            now: dependencies.googleClock, logger: logger)
    }
    let verifier = IDTokenVerifier(
        projectId: configuration.firebaseProjectID, keys: keyCache, clockSkew: configuration.tokenClockSkewSeconds,
        emulatorMode: configuration.authEmulatorHost != nil, logger: logger)

    var settings = LocifySettings(storageBucket: configuration.storageBucket)
    settings.tombstoneRetentionSeconds = Int64(configuration.tombstoneRetentionSeconds)
    settings.maxPushChanges = configuration.maxPushChanges
    let cleanupSkips = CleanupSkips(logger: logger)
    let services = LocifyServices(pool: pool, settings: settings, now: dependencies.now, cleanupSkips: cleanupSkips)

    // The clean-up worker holds a connection while Google answers; the purge needs another.
    let workerPool = ConnectionPool(configuration: databaseConfiguration, size: 2, logger: logger)
    let executor = try cleanupExecutor(
        configuration: configuration, transport: dependencies.googleTransport, now: dependencies.googleClock, logger: logger)
    let cleanupWorker = CleanupWorker(
        pool: workerPool, executor: executor, settings: dependencies.cleanupSettings, logger: logger, skips: cleanupSkips)
    let purger = TombstonePurger(
        pool: workerPool, retentionSeconds: Int64(configuration.tombstoneRetentionSeconds),
        interval: .seconds(configuration.tombstonePurgeIntervalSeconds), logger: logger)

    // One connection per instance listens for the notifications of every user's committed
    // changes (not one per waiting pull), and one sends this instance's; off when long-poll is.
    let liveChanges =
        configuration.maxWaitSeconds > 0
        ? LiveChanges(
            configuration: databaseConfiguration, maxWaitersPerUser: configuration.maxWaitsPerUser,
            timing: dependencies.listenTiming, logger: logger)
        : nil

    let metrics = Metrics()
    let serverBox = ServerBox()
    var router = Router<Route>()
    let wakeWorker: @Sendable () -> Void = { cleanupWorker.wake() }
    ResourceRoutes(services: services, cleanupQueued: wakeWorker).register(in: &router)
    SyncRoutes(
        services: services,
        limits: ClientLimits(
            maxPushChanges: configuration.maxPushChanges, maxBodyBytes: http.maxBodyBytes,
            tombstoneRetentionSeconds: configuration.tombstoneRetentionSeconds,
            maxWaitSeconds: liveChanges == nil ? 0 : configuration.maxWaitSeconds),
        longPoll: liveChanges.map { LongPoll(changes: $0, maxWaitSeconds: configuration.maxWaitSeconds) },
        cleanupQueued: wakeWorker
    ).register(in: &router)
    UserRoutes(services: services, cleanupQueued: wakeWorker).register(in: &router)
    let readiness = Readiness()
    let authEmulatorMode = configuration.authEmulatorHost != nil
    OperationsRoutes(
        draining: readiness,
        readiness: ReadinessCache {
            (try? pool.withConnection { connection in try connection.query("SELECT 1") }) != nil
        },
        metrics: {
            let poolStatistics = pool.statistics
            let jobs = cleanupWorker.statistics
            return metrics.render(
                Metrics.Gauges(
                    openConnections: serverBox.server?.openConnections ?? 0, poolInUse: poolStatistics.inUse,
                    poolIdle: poolStatistics.idle, poolWaiting: poolStatistics.waiting, cleanupPending: jobs.pending,
                    cleanupFailed: jobs.failed, cleanupFailedPermanent: jobs.failedPermanent,
                    cleanupSkipped: cleanupSkips.snapshot, authEmulatorMode: authEmulatorMode,
                    live: liveChanges?.statistics))
        },
        openAPIDocument: FileManager.default.contents(atPath: dependencies.openAPIPath).map { Array($0) },
        authEmulatorMode: authEmulatorMode
    ).register(in: &router)

    var responder = LocifyResponder(
        router: router,
        authenticator: Authenticator(verifier: verifier, revocationSkewSeconds: verifier.clockSkew, logger: logger),
        rateLimiter: RateLimiter(ratePerSecond: configuration.rateLimitPerSecond, burst: configuration.rateLimitBurst),
        addressLimiter: RateLimiter(
            ratePerSecond: configuration.addressRateLimitPerSecond, burst: configuration.addressRateLimitBurst,
            maxKeys: 100_000),
        refusedLogLines: RateLimiter(ratePerSecond: 100, burst: 100),
        floodLog: SampledLog(),
        admit: { caller in try services.users.admit(caller) }, inlinePaths: OperationsRoutes.inlinePaths, metrics: metrics,
        logger: logger)
    if let liveChanges {
        responder.writeCommitted = { userID in liveChanges.changed(userID) }
    }
    let server = HTTPServer(configuration: http, responder: responder, logger: logger)
    serverBox.server = server
    return Application(
        server: server, pool: pool, workerPool: workerPool, cleanupWorker: cleanupWorker, routes: router.routes, purger: purger,
        keyCache: keyCache, verifier: verifier, shutdownGrace: .seconds(configuration.shutdownGraceSeconds),
        shutdownDelay: .seconds(configuration.shutdownDelaySeconds), readiness: readiness, liveChanges: liveChanges,
        logger: logger)
}

/// The HTTP server's settings from the configuration (and the tests' adjustments).
private func httpConfiguration(_ configuration: Configuration, dependencies: ApplicationDependencies) -> HTTPServerConfiguration {
    var http = HTTPServerConfiguration(host: configuration.host, port: configuration.port)
    http.maxConnections = configuration.maxConnections
    http.maxConnectionsPerAddress = configuration.maxConnectionsPerAddress
    http.maxBufferedBodyBytes = configuration.maxBufferedBodyBytes
    http.maxBufferedBodyBytesPerClient = configuration.maxBufferedBodyBytesPerClient
    http.minBodyBytesPerSecond = configuration.minBodyBytesPerSecond
    http.maxBufferedConnectionBytes = configuration.maxBufferedConnectionBytes
    http.workerThreads = configuration.databasePoolSize
    // Beside the connections: both database pools, a Google call per worker and the key
    // fetch, live sync's listening and notifying connections, the files read while running,
    // and a margin.
    http.reservedFileDescriptors = 2 * configuration.databasePoolSize + 2 + 2 + 32
    dependencies.configureHTTP(&http)
    return http
}

/// Raises the open-file limit to what the HTTP server needs, or refuses to start naming
/// `LOCIFY_MAX_CONNECTIONS`.
private func raiseOpenFileLimit(for http: HTTPServerConfiguration) throws {
    do {
        try HTTPServer.raiseOpenFileLimit(for: http)
    } catch {
        guard case .openFileLimit(let needed, let hardLimit) = error else { throw error }
        throw ConfigurationError(
            variable: "LOCIFY_MAX_CONNECTIONS",
            problem:
                "\(http.maxConnections) connections and the server's other descriptors need \(needed) open files, but the hard limit (ulimit -Hn) is \(hardLimit): raise the hard limit or lower LOCIFY_MAX_CONNECTIONS; refusing to start"
        )
    }
}

/// Applies pending migrations, waiting up to about 30 s for the database to come up.
private func runMigrations(configuration: Configuration, pool: ConnectionPool, logger: Logger) throws -> [String] {
    let runner = MigrationRunner(directory: configuration.migrationsDirectory, logger: logger)
    var attempt = 0
    while true {
        do {
            return try runner.run(using: pool)
        } catch let error as PostgresError where error.isUnavailable && attempt < 10 {
            attempt += 1
            logger.warning("database not reachable yet; retrying", metadata: ["attempt": "\(attempt)", "error": "\(error)"])
            DedicatedThread.sleep(for: .seconds(3))
        }
    }
}

/// The Google clients of the clean-up worker: a service account (or the emulators) for both
/// Storage and Identity Toolkit; nil when neither is configured (local development), in which
/// case jobs stay queued.
private func cleanupExecutor(
    configuration: Configuration, transport: any HTTPTransport, now: @escaping @Sendable () -> Double, logger: Logger
) throws -> (any CleanupExecutor)? {
    var tokens: (any AccessTokenSource)?
    if let path = configuration.googleApplicationCredentials {
        let account = try ServiceAccount.load(path: path)
        tokens = try ServiceAccountTokenProvider(account: account, transport: transport, now: now, logger: logger)
    }
    let storage: CloudStorageClient? =
        if let host = configuration.storageEmulatorHost {
            .emulator(host: host, transport: transport)
        } else if let tokens {
            CloudStorageClient(baseURL: configuration.storageAPIURL, transport: transport, tokens: tokens)
        } else {
            nil
        }
    let identity: IdentityToolkitClient? =
        if let host = configuration.authEmulatorHost {
            .emulator(host: host, transport: transport)
        } else if let tokens {
            IdentityToolkitClient(baseURL: configuration.identityAPIURL, transport: transport, tokens: tokens)
        } else {
            nil
        }
    guard let storage, let identity else {
        logger.warning(
            "no Google credentials (GOOGLE_APPLICATION_CREDENTIALS) or emulators configured: account and category clean-up jobs stay queued until they are")
        return nil
    }
    return GoogleCleanupExecutor(
        storage: storage, identity: identity, bucket: configuration.storageBucket, projectID: configuration.firebaseProjectID)
}

/// Lets the metrics closure reach the server, which is created after the routes. Weak: the
/// server owns the router that owns the closure, so a strong reference would be a cycle keeping
/// every shut-down application alive (LeakSanitizer found it).
private final class ServerBox: @unchecked Sendable {
    // safe because: set once in buildApplication before the server starts; read-only afterwards.
    weak var server: HTTPServer?
}
