import ChangeNotifications
import FirebaseAdmin
import HTTPServer
import Locify
import LocifyAPI
import LocifyJobs
import Logging
import Postgres
import Primitives

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
    /// The background work (`LocifyJobs`): the clean-up worker, the tombstone purge and the
    /// cascade worker, started with the server and drained together at shutdown.
    let workers: [any BackgroundWorker]
    let keyCache: PublicKeyCache?
    /// The ID-token verifier of every request (tests count its signature checks).
    let verifier: IDTokenVerifier
    let shutdownGrace: Duration
    let shutdownDelay: Duration
    /// The HTTP face; told when the server starts draining.
    let api: APIFront
    let logger: Logger
    /// Wakes long-poll pulls when a change of their user commits; nil when long-poll is off.
    let liveChanges: LiveChanges?

    init(
        server: HTTPServer, pool: ConnectionPool, workerPool: ConnectionPool, cleanupWorker: CleanupWorker,
        workers: [any BackgroundWorker], keyCache: PublicKeyCache?,
        verifier: IDTokenVerifier, shutdownGrace: Duration, shutdownDelay: Duration, api: APIFront,
        liveChanges: LiveChanges?, logger: Logger
    ) {
        self.server = server
        self.pool = pool
        routes = api.routes
        self.workerPool = workerPool
        self.cleanupWorker = cleanupWorker
        self.workers = workers
        self.keyCache = keyCache
        self.verifier = verifier
        self.shutdownGrace = shutdownGrace
        self.shutdownDelay = shutdownDelay
        self.api = api
        self.liveChanges = liveChanges
        self.logger = logger
    }

    /// Longest wait at start-up for Google's ID-token keys, seconds.
    static let keyPrefetchWait: Double = 5

    /// The port the server listens on (after `start`).
    public var port: Int { server.localPort }

    /// The request pipeline the HTTP server runs (`LocifyResponder`): tests call it in process,
    /// without sockets, on an application started with `start(listening: false)`.
    public var responder: any HTTPResponder { api.responder }

    /// The long-poll counts (waiting pulls, wake-ups, notifications, listener reconnects); nil
    /// when long-poll is off.
    public var liveStatistics: LiveChanges.Statistics? { liveChanges?.statistics }

    /// Warms the key cache (at most `keyPrefetchWait` s), then starts listening and the
    /// background work.
    public func start() throws {
        try start(listening: true)
    }

    /// `start`, listening only when `listening`: without it, the background work runs and
    /// requests reach the application only through `responder` (the in-process test harness).
    public func start(listening: Bool) throws {
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
        if listening { try server.start() }
        for worker in workers { worker.start() }
        if listening { logger.info("locify-server listening", metadata: ["port": "\(port)"]) }
    }

    /// Answers every waiting pull at once (with what the feed had, and `Connection: close`, so its
    /// client asks again, normally of another instance), reports not ready (`/health/ready` 503)
    /// and keeps serving for the shutdown delay, then stops accepting, lets in-flight requests
    /// finish within the grace period (pulls that began waiting meanwhile are answered at once),
    /// stops the background work and closes the database pools.
    public func shutdown() {
        server.answerWaitingRequests()
        let alreadyDraining = api.beginDraining()
        if !alreadyDraining && shutdownDelay > .zero {
            logger.info("not ready; serving until the shutdown delay is over", metadata: ["delay_s": "\(shutdownDelay.seconds)"])
            DedicatedThread.sleep(for: shutdownDelay)
        }
        logger.info("shutting down", metadata: ["grace_s": "\(shutdownGrace.seconds)"])
        server.shutdown(gracePeriod: shutdownGrace)
        for worker in workers { worker.drain() }
        for worker in workers { worker.stop() }
        // After the last writer: the notifier sends what they announced before it stops.
        liveChanges?.stop()
        pool.close()
        workerPool.close()
    }

    /// Blocks until the server has stopped.
    public func waitUntilStopped() {
        server.waitUntilStopped()
    }
}
