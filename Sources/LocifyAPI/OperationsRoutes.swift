import HTTPServer
import JSON
import Postgres

/// `/health`, `/health/ready`, `/metrics` and `/openapi.yaml` (API.md section 9): no token,
/// never rate limited.
struct OperationsRoutes: Sendable {
    let pool: ConnectionPool
    /// Says when the server is draining: readiness is then 503 whatever the database says.
    let readiness: Readiness
    let metrics: @Sendable () -> String
    /// The served contract, read at start; nil when the file was not found.
    let openAPIDocument: [UInt8]?

    /// The operational paths whose handlers are cheap and never block: the server answers them
    /// on its I/O threads, without a hop to the worker pool (`/health/ready` queries the database,
    /// so it is not one of them).
    static let inlinePaths: Set<String> = ["/health", "/metrics", "/openapi.yaml"]

    func register(in router: inout Router<Route>) {
        router.add(.GET, "/health", Route(handler: .open { _ in Self.ok }))
        let pool = self.pool
        let readiness = self.readiness
        router.add(.GET, "/health/ready", Route(handler: .open { _ in
            if readiness.isDraining {
                throw APIError.unavailable("server is shutting down")
            }
            do {
                _ = try pool.withConnection { connection in try connection.query("SELECT 1") }
            } catch {
                throw APIError.unavailable("database unreachable")
            }
            return Self.ok
        }))
        let metrics = self.metrics
        router.add(.GET, "/metrics", Route(handler: .open { _ in
            HTTPResponse(
                status: .ok, headers: ["Content-Type": "text/plain; version=0.0.4; charset=utf-8"],
                body: Array(metrics().utf8))
        }))
        let document = openAPIDocument
        router.add(.GET, "/openapi.yaml", Route(handler: .open { _ in
            guard let document else { throw APIError.routeNotFound }
            return HTTPResponse(status: .ok, headers: ["Content-Type": "application/yaml; charset=utf-8"], body: document)
        }))
    }

    private static let ok = HTTPResponse.json(.ok, Array(#"{"status":"ok"}"#.utf8))
}
