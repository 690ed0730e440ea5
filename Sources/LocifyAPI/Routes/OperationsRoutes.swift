import HTTPServer
import JSON
import Postgres

/// `/health`, `/health/ready`, `/metrics` and `/openapi.yaml` (openapi.yaml): no token,
/// never rate limited.
struct OperationsRoutes: Sendable {
    /// Says when the server is draining: readiness is then 503 whatever the database says.
    let draining: Readiness
    let readiness: ReadinessCache
    let metrics: @Sendable () -> String
    /// The served contract, read at start; nil when the file was not found.
    let openAPIDocument: [UInt8]?
    /// Whether unsigned Auth-emulator tokens are accepted: `/health` then says `"auth": "emulator"`.
    let authEmulatorMode: Bool

    /// `/health` and `/openapi.yaml` are cheap and never block: the server answers them on its
    /// I/O threads, without a hop to the worker pool. `/health/ready` may query the database, and
    /// `/metrics` reads `/proc` and renders every series (0.1 ms for 44 series in a debug build,
    /// growing with every route and status in use; a blocked I/O thread stalls all its
    /// connections), so both run on workers.
    func register(in router: inout Router<Route>) {
        let health = authEmulatorMode ? Self.okEmulator : Self.ok
        router.addOpen(.GET, "/health", execution: .inline) { _ in health }
        let draining = self.draining
        let readiness = self.readiness
        router.addOpen(.GET, "/health/ready") { _ in
            if draining.isDraining { throw APIError.unavailable("server is shutting down") }
            guard readiness.isReady() else { throw APIError.unavailable("database unreachable") }
            return health
        }
        let metrics = self.metrics
        router.addOpen(.GET, "/metrics") { _ in
            HTTPResponse(
                status: .ok, headers: ["Content-Type": "text/plain; version=0.0.4; charset=utf-8"],
                body: Array(metrics().utf8))
        }
        let document = openAPIDocument
        router.addOpen(.GET, "/openapi.yaml", execution: .inline) { _ in
            guard let document else { throw APIError.routeNotFound }
            return HTTPResponse(status: .ok, headers: ["Content-Type": "application/yaml; charset=utf-8"], body: document)
        }
    }

    private static let ok = HTTPResponse.json(.ok, Array(#"{"status":"ok"}"#.utf8))
    private static let okEmulator = HTTPResponse.json(.ok, Array(#"{"status":"ok","auth":"emulator"}"#.utf8))
}
