import ChangeNotifications
import FirebaseAdmin
import FoundationEssentials
import HTTPClient
import HTTPServer
import Locify
import LocifyAPI
import LocifyJobs
import LocifyRules
import Logging
import Postgres
import Primitives

/// Builds the whole application from its configuration (openapi.yaml): connects to the
/// database and applies pending migrations, sets up token verification (or the Auth emulator),
/// the Google clients for clean-up (or none), the domain services, workers and the HTTP server.
/// Each part has its builder below, in the order they are built.
public func buildApplication(
    configuration: Configuration, logger: Logger, dependencies: ApplicationDependencies = ApplicationDependencies()
) throws -> Application {
    // Before anything else (the database is not touched): emulator mode must not reach production,
    // and the open-file limit must allow the connections.
    try configuration.validateEmulatorSafety()
    let http = try fitConnectionsToOpenFileLimit(
        httpConfiguration(configuration, dependencies: dependencies), setByOperator: configuration.maxConnections != nil,
        logger: logger)
    try raiseOpenFileLimit(for: http)
    let database = try buildDatabase(configuration, logger: logger)
    let (keyCache, verifier) = buildAuthentication(configuration, dependencies: dependencies, logger: logger)

    var settings = LocifySettings(storageBucket: configuration.storageBucket)
    settings.tombstoneRetentionSeconds = Int64(configuration.tombstoneRetentionSeconds)
    settings.maxPushChanges = configuration.maxPushChanges
    // One connection per instance listens for the notifications of every user's committed
    // changes (not one per waiting pull), and one sends this instance's; off when long-poll is.
    let liveChanges =
        configuration.maxWaitSeconds > 0
        ? LiveChanges(
            configuration: database.configuration, maxWaitersPerUser: configuration.maxWaitsPerUser,
            timing: dependencies.listenTiming, logger: logger)
        : nil
    // What the domain announces after each commit of a user's change wakes that user's waiting pulls.
    var announce: ChangeAnnouncer?
    if let liveChanges { announce = { userID in liveChanges.changed(userID) } }
    let cleanupSkips = CleanupSkips(logger: logger)
    let services = LocifyServices(
        pool: database.pool, settings: settings, clock: dependencies.wallClock, cleanupSkips: cleanupSkips, announce: announce)
    let jobs = try buildJobs(
        configuration, database: database.configuration, cleanupSkips: cleanupSkips, cascades: services.cascades, announce: announce,
        dependencies: dependencies, logger: logger)

    let api = buildAPI(
        configuration, http: http, services: services, verifier: verifier, database: database.pool, jobs: jobs,
        cleanupSkips: cleanupSkips, liveChanges: liveChanges, dependencies: dependencies, logger: logger)
    let server = HTTPServer(configuration: http, responder: api.front.responder, logger: logger)
    api.serverBox.server = server
    return Application(
        server: server, pool: database.pool, workerPool: jobs.pool, cleanupWorker: jobs.cleanupWorker, workers: jobs.workers,
        keyCache: keyCache, verifier: verifier, shutdownGrace: .seconds(configuration.shutdownGraceSeconds),
        shutdownDelay: .seconds(configuration.shutdownDelaySeconds), api: api.front, liveChanges: liveChanges,
        logger: logger)
}

/// The database of the requests: its connection settings and pool, the migrations applied.
private func buildDatabase(
    _ configuration: Configuration, logger: Logger
) throws -> (configuration: PostgresConfiguration, pool: ConnectionPool) {
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
    return (databaseConfiguration, pool)
}

/// The ID-token verifier and the cache of Google's keys it checks signatures with (none in Auth
/// emulator mode, whose unsigned tokens it accepts).
private func buildAuthentication(
    _ configuration: Configuration, dependencies: ApplicationDependencies, logger: Logger
) -> (keyCache: PublicKeyCache?, verifier: IDTokenVerifier) {
    let keyCache: PublicKeyCache?
    if configuration.authEmulatorHost != nil {
        keyCache = nil
        logger.critical(
            "FIREBASE_AUTH_EMULATOR_HOST is set: unsigned emulator tokens are ACCEPTED. Never run like this in production.")
    } else {
        keyCache = PublicKeyCache(
            source: HTTPCertificateSource(url: configuration.idTokenCertsURL, transport: dependencies.googleTransport),
            clock: dependencies.wallClock, logger: logger)
    }
    let verifier = IDTokenVerifier(
        projectId: configuration.firebaseProjectID, keys: keyCache, clockSkew: configuration.tokenClockSkewSeconds,
        emulatorMode: configuration.authEmulatorHost != nil, clock: dependencies.wallClock, logger: logger)
    return (keyCache, verifier)
}

/// The background work (`LocifyJobs`) and the small pool it runs on.
private struct Jobs {
    /// The clean-up worker holds a connection while Google answers; the purge and the cascade
    /// worker share the other (the purge runs briefly, once an interval).
    let pool: ConnectionPool
    let cleanupWorker: CleanupWorker
    let cascadeWorker: CascadeWorker
    /// Every worker, in the order they start (`Application`).
    let workers: [any BackgroundWorker]
}

/// The clean-up worker (with the Google clients of `cleanupExecutor`), the tombstone purge and the
/// cascade worker, on a database pool of their own.
private func buildJobs(
    _ configuration: Configuration, database: PostgresConfiguration, cleanupSkips: CleanupSkips, cascades: PendingCascades,
    announce: ChangeAnnouncer?, dependencies: ApplicationDependencies, logger: Logger
) throws -> Jobs {
    let pool = ConnectionPool(configuration: database, size: 2, logger: logger)
    let executor = try cleanupExecutor(
        configuration: configuration, transport: dependencies.googleTransport, clock: dependencies.wallClock, logger: logger)
    let cleanupWorker = CleanupWorker(
        pool: pool, executor: executor, settings: dependencies.cleanupSettings, logger: logger, skips: cleanupSkips)
    let purger = TombstonePurger(
        pool: pool, retentionSeconds: Int64(configuration.tombstoneRetentionSeconds),
        interval: .seconds(configuration.tombstonePurgeIntervalSeconds), logger: logger)
    let cascadeWorker = CascadeWorker(
        pool: pool, cascades: cascades, clock: dependencies.monotonicClock, announce: announce,
        cleanupQueued: { cleanupWorker.wake() }, logger: logger)
    let workers: [any BackgroundWorker] = dependencies.runsBackgroundWorkers ? [cleanupWorker, purger, cascadeWorker] : []
    return Jobs(pool: pool, cleanupWorker: cleanupWorker, cascadeWorker: cascadeWorker, workers: workers)
}

/// The HTTP face (`LocifyAPI`) over the services, with the operational state `/health/ready`
/// and `/metrics` read, and the box the metrics reach the HTTP server through once it exists.
private func buildAPI(
    _ configuration: Configuration, http: HTTPServerConfiguration, services: LocifyServices, verifier: IDTokenVerifier,
    database pool: ConnectionPool, jobs: Jobs, cleanupSkips: CleanupSkips, liveChanges: LiveChanges?,
    dependencies: ApplicationDependencies, logger: Logger
) -> (front: APIFront, serverBox: ServerBox) {
    let serverBox = ServerBox()
    let cleanupWorker = jobs.cleanupWorker
    let cascadeWorker = jobs.cascadeWorker
    let authEmulatorMode = configuration.authEmulatorHost != nil
    let front = APIFront(
        configuration: configuration, maxBodyBytes: http.maxBodyBytes, services: services, verifier: verifier,
        liveChanges: liveChanges,
        cleanupQueued: {
            cleanupWorker.wake()
            cascadeWorker.wake()
        },
        databaseReady: { pool.isReachable() },
        gauges: {
            let poolStatistics = pool.statistics
            let jobs = cleanupWorker.statistics
            return MetricsGauges(
                openConnections: serverBox.server?.openConnections ?? 0, poolInUse: poolStatistics.inUse,
                poolIdle: poolStatistics.idle, poolWaiting: poolStatistics.waiting, cleanupPending: jobs.pending,
                cleanupFailed: jobs.failed, cleanupFailedPermanent: jobs.failedPermanent,
                cleanupSkipped: cleanupSkips.snapshot, authEmulatorMode: authEmulatorMode,
                live: liveChanges?.statistics)
        },
        openAPIDocument: FileManager.default.contents(atPath: dependencies.openAPIPath).map { Array($0) },
        clock: dependencies.monotonicClock, wallClock: dependencies.wallClock, logger: logger)
    return (front, serverBox)
}

/// The HTTP server's settings from the configuration (and the tests' adjustments).
private func httpConfiguration(_ configuration: Configuration, dependencies: ApplicationDependencies) -> HTTPServerConfiguration {
    var http = HTTPServerConfiguration(host: configuration.host, port: configuration.port)
    http.maxConnections = configuration.maxConnections ?? Configuration.defaultMaxConnections
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
    http.clock = dependencies.monotonicClock
    http.wallClock = dependencies.wallClock
    dependencies.configureHTTP(&http)
    return http
}

/// The HTTP settings with as many connections as the open-file hard limit allows, with a warning,
/// when the default number (`setByOperator` false) does not fit: a default must fit the machine
/// (issue 35 item 6). A number the operator set is left for `raiseOpenFileLimit` to refuse.
private func fitConnectionsToOpenFileLimit(
    _ http: HTTPServerConfiguration, setByOperator: Bool, logger: Logger
) throws -> HTTPServerConfiguration {
    guard !setByOperator, let hardLimit = try HTTPServer.openFileHardLimit() else { return http }
    let fitting = HTTPServer.maxConnections(fittingOpenFiles: hardLimit, configuration: http)
    guard fitting < http.maxConnections, fitting >= 1 else { return http }
    logger.warning(
        "the open-file hard limit (ulimit -Hn) is \(hardLimit): allowing \(fitting) connections instead of the default \(http.maxConnections); raise the hard limit or set LOCIFY_MAX_CONNECTIONS",
        metadata: ["LOCIFY_MAX_CONNECTIONS": "\(fitting)", "open_file_hard_limit": "\(hardLimit)"])
    var fitted = http
    fitted.maxConnections = fitting
    return fitted
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
    configuration: Configuration, transport: any HTTPTransport, clock: WallClock, logger: Logger
) throws -> (any CleanupExecutor)? {
    var tokens: (any AccessTokenSource)?
    if let path = configuration.googleApplicationCredentials {
        let account = try ServiceAccount.load(path: path)
        tokens = try ServiceAccountTokenProvider(account: account, transport: transport, clock: clock, logger: logger)
    }
    let storage: CloudStorageClient? =
        if let host = configuration.storageEmulatorHost {
            .emulator(host: host, transport: transport, clock: clock)
        } else if let tokens {
            CloudStorageClient(baseURL: configuration.storageAPIURL, transport: transport, tokens: tokens, clock: clock)
        } else {
            nil
        }
    let identity: IdentityToolkitClient? =
        if let host = configuration.authEmulatorHost {
            .emulator(host: host, transport: transport, clock: clock)
        } else if let tokens {
            IdentityToolkitClient(baseURL: configuration.identityAPIURL, transport: transport, tokens: tokens, clock: clock)
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
