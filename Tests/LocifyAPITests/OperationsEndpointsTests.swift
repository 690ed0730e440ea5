import Foundation
import JSON
import Testing
import TestSupport
import TestSupportServer

/// `/health`, `/health/ready` and `/openapi.yaml` (openapi.yaml): no token needed.
@Suite("Operations: health, readiness and the served contract")
struct OperationsEndpointsTests {
    @Test("GET /health is 200 {\"status\":\"ok\"} as JSON, with or without any token")
    func health() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        for token in [nil, "not-a-token", try server.token(for: "ops-health")] {
            let response = try server.request("GET", "/health", token: token)
            #expect(response.status == 200)
            #expect(response.headers["Content-Type"] == "application/json; charset=utf-8")
            #expect(response.json == ["status": "ok"])
        }
    }

    @Test("GET /health/ready is 200 while the database answers")
    func ready() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let response = try server.request("GET", "/health/ready")
        #expect(response.status == 200)
        #expect(response.json == ["status": "ok"])
    }

    @Test("GET /health/ready is 503 S003 with Retry-After when the database cannot be used, while /health stays 200")
    func notReady() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        server.application.pool.close()
        let response = try server.request("GET", "/health/ready")
        #expect(response.status == 503)
        #expect(response.errorCode == "S003")
        #expect(response.headers["Retry-After"].flatMap { Int($0) }.map { $0 >= 1 } == true)
        #expect(try server.request("GET", "/health").status == 200)
    }

    @Test("Once shutdown begins, /health/ready is 503 S003 with Retry-After for the shutdown delay, while new connections are still served")
    func notReadyWhileDraining() throws {
        let server = try TestServer.start(configure: { $0.shutdownDelaySeconds = 5 })
        defer { server.stop() }
        let token = try server.token(for: "ops-draining")
        #expect(try server.request("GET", "/health/ready").status == 200)
        let application = server.application
        let shutdown = BackgroundThread { application.shutdown() }
        let notReady = try eventually(timeout: .seconds(2)) { try server.request("GET", "/health/ready").status == 503 }
        #expect(notReady)
        let response = try server.request("GET", "/health/ready")
        #expect(response.status == 503)
        #expect(response.errorCode == "S003")
        #expect(response.headers["Retry-After"].flatMap { Int($0) }.map { $0 >= 1 } == true)
        // A load balancer still sending requests before its health check notices gets them served.
        let served = try server.request("GET", "/v1/categories", token: token)
        #expect(served.status == 200)
        #expect(served.data.count == 4)
        #expect(try server.request("GET", "/health").status == 200)
        try shutdown.join(timeout: .seconds(30))
    }

    @Test("GET /openapi.yaml serves the repository's openapi.yaml as application/yaml")
    func openAPIDocument() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let file = try Data(contentsOf: ProjectPaths.root.appendingPathComponent("openapi.yaml"))
        let response = try server.request("GET", "/openapi.yaml")
        #expect(response.status == 200)
        #expect(response.headers["Content-Type"] == "application/yaml; charset=utf-8")
        #expect(response.body == Array(file))
    }

    @Test("GET /openapi.yaml is 404 E007 when the server found no document at start")
    func openAPIDocumentMissing() throws {
        let server = try TestServer.start(.inProcess, dependencies: { $0.openAPIPath = "/nonexistent/openapi.yaml" })
        defer { server.stop() }
        let response = try server.request("GET", "/openapi.yaml")
        #expect(response.status == 404)
        #expect(response.errorCode == "E007")
    }
}
