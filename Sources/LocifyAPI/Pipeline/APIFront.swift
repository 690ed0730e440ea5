import ChangeNotifications
import FirebaseAdmin
import HTTPServer
import Locify
import Logging
import Primitives

/// The HTTP face of the server, assembled: the request pipeline `HTTPServer` runs, its route
/// table, and the switch that makes `/health/ready` answer 503 while the server drains. Built by
/// the composition root (`LocifyServer`) from the domain's services and the state it owns.
public struct APIFront: Sendable {
    /// The request pipeline (`LocifyResponder`) over every route.
    public let responder: any HTTPResponder
    /// Every (method, path pattern) the server answers (HEAD implied by GET).
    public let routes: [(method: HTTPMethod, pattern: String)]
    private let readiness: Readiness

    /// The API over `services`, its limits from `configuration`.
    /// - Parameters:
    ///   - maxBodyBytes: the HTTP server's body limit, told to clients by `GET /v1/sync/limits`.
    ///   - liveChanges: wakes waiting pulls; nil when long-poll is off.
    ///   - cleanupQueued: called after a request queued clean-up jobs, which every category delete
    ///     and account deletion does (wakes the clean-up worker, and the cascade worker a cascade needs).
    ///   - databaseReady: whether the database answers, for `/health/ready` (cached there).
    ///   - gauges: what `/metrics` reports besides the request counters, read at each scrape.
    ///   - openAPIDocument: the contract `/openapi.yaml` serves; nil when it was not found.
    ///   - clock: the application's monotonic clock (rate limits, readiness cache, durations).
    ///   - wallClock: the application's wall clock (the sync answers' `server_time`).
    public init(
        configuration: Configuration, maxBodyBytes: Int, services: LocifyServices, verifier: IDTokenVerifier,
        liveChanges: LiveChanges?, cleanupQueued: @escaping @Sendable () -> Void, databaseReady: @escaping @Sendable () -> Bool,
        gauges: @escaping @Sendable () -> MetricsGauges, openAPIDocument: [UInt8]?, clock: MonotonicClock, wallClock: WallClock,
        logger: Logger
    ) {
        let metrics = Metrics()
        let readiness = Readiness()
        var router = Router<Route>()
        ResourceRoutes(services: services, cleanupQueued: cleanupQueued).register(in: &router)
        SyncRoutes(
            services: services,
            limits: ClientLimits(
                maxPushChanges: configuration.maxPushChanges, maxBodyBytes: maxBodyBytes,
                tombstoneRetentionSeconds: configuration.tombstoneRetentionSeconds,
                maxWaitSeconds: liveChanges == nil ? 0 : configuration.maxWaitSeconds),
            longPoll: liveChanges.map { LongPoll(changes: $0, maxWaitSeconds: configuration.maxWaitSeconds) },
            cleanupQueued: cleanupQueued,
            wallClock: wallClock
        ).register(in: &router)
        UserRoutes(services: services, cleanupQueued: cleanupQueued).register(in: &router)
        OperationsRoutes(
            draining: readiness,
            readiness: ReadinessCache(clock: clock, probe: databaseReady),
            metrics: { metrics.render(gauges()) },
            openAPIDocument: openAPIDocument,
            authEmulatorMode: configuration.authEmulatorHost != nil
        ).register(in: &router)

        self.responder = LocifyResponder(
            router: router,
            refusals: RefusalLimiter(
                buckets: RateLimiter(
                    ratePerSecond: configuration.addressRateLimitPerSecond, burst: configuration.addressRateLimitBurst,
                    maxKeys: 100_000, clock: clock)),
            authenticator: Authenticator(verifier: verifier, revocationSkewSeconds: verifier.clockSkew, logger: logger),
            rateLimiter: RateLimiter(
                ratePerSecond: configuration.rateLimitPerSecond, burst: configuration.rateLimitBurst, clock: clock),
            gate: AccountGateStage(accounts: services.accounts),
            renderer: ResponseRenderer(logger: logger),
            observer: RequestObserver(
                metrics: metrics, clock: clock, logger: logger,
                refusedLogLines: RateLimiter(ratePerSecond: 100, burst: 100, clock: clock), floodLog: SampledLog(clock: clock)))
        self.readiness = readiness
        routes = router.routes
    }

    /// Reports not ready from now on (`/health/ready` 503, whatever the database says); returns
    /// whether it already did.
    public func beginDraining() -> Bool {
        readiness.beginDraining()
    }
}
