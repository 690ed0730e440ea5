import Foundation
import JSON
import Testing
import TestSupport
import TestSupportServer

/// `GET /metrics` (openapi.yaml): Prometheus text with the pinned metric names.
@Suite("Metrics: GET /metrics in Prometheus text format")
struct MetricsTests {
    private func scrape(_ server: TestServer) throws -> PrometheusText {
        let response = try server.request("GET", "/metrics")
        #expect(response.status == 200)
        #expect(response.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8")
        return try PrometheusText(response.text)
    }

    @Test("the exposition is well-formed and declares every pinned family with its type")
    func families() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        _ = try server.request("GET", "/health")
        let metrics = try scrape(server)
        #expect(metrics.types["http_requests_total"] == "counter")
        #expect(metrics.types["http_request_duration_seconds"] == "histogram")
        for gauge in [
            "http_open_connections", "db_pool_connections", "db_pool_waiting", "cleanup_jobs", "process_resident_memory_bytes",
        ] {
            #expect(metrics.types[gauge] == "gauge", "\(gauge)")
            #expect(metrics.help[gauge]?.isEmpty == false, "\(gauge) has help")
        }
    }

    @Test("http_requests_total counts by method, route pattern (not the raw path) and status")
    func requestCounter() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let token = try server.token(for: "metrics-counter")
        for _ in 0..<3 { _ = try server.request("GET", "/v1/categories", token: token) }
        let missing = UUID().uuidString.lowercased()
        #expect(try server.request("GET", "/v1/categories/\(missing)", token: token).status == 404)
        #expect(try server.request("GET", "/v1/categories").status == 401)
        #expect(try server.request("GET", "/no/such/route").status == 404)
        #expect(try server.request("PATCH", "/v1/categories", token: token).status == 405)

        let metrics = try scrape(server)
        func count(_ method: String, _ route: String, _ status: String) -> Double? {
            metrics.value("http_requests_total", ["method": method, "route": route, "status": status])
        }
        #expect(count("GET", "/v1/categories", "200") == 3)
        #expect(count("GET", "/v1/categories", "401") == 1)
        #expect(count("GET", "/v1/categories/{id}", "404") == 1)
        // Unknown paths share one label value, so random URLs cannot blow up the series count.
        #expect(count("GET", "unmatched", "404") == 1)
        #expect(count("PATCH", "unmatched", "405") == 1)
        #expect(!metrics.samples(named: "http_requests_total").contains { $0.labels["route"]?.contains(missing) == true })
    }

    @Test("http_request_duration_seconds is a cumulative histogram per route")
    func latencyHistogram() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let token = try server.token(for: "metrics-histogram")
        for _ in 0..<4 { _ = try server.request("GET", "/v1/info", token: token) }
        _ = try server.request("GET", "/health")
        let metrics = try scrape(server)

        let buckets = metrics.samples(named: "http_request_duration_seconds_bucket").filter { $0.labels["route"] == "/v1/info" }
        #expect(buckets.count >= 2)
        #expect(buckets.allSatisfy { Set($0.labels.keys) == ["route", "le"] })
        let ordered = buckets.sorted { (Double($0.labels["le"] ?? "") ?? .infinity) < (Double($1.labels["le"] ?? "") ?? .infinity) }
        #expect(ordered.last?.labels["le"] == "+Inf")
        for (lower, upper) in zip(ordered, ordered.dropFirst()) {
            #expect(lower.value <= upper.value, "buckets are cumulative")
        }
        #expect(ordered.last?.value == 4)
        #expect(metrics.value("http_request_duration_seconds_count", ["route": "/v1/info"]) == 4)
        let sum = try #require(metrics.value("http_request_duration_seconds_sum", ["route": "/v1/info"]))
        #expect(sum > 0)
        #expect(metrics.value("http_request_duration_seconds_count", ["route": "/health"]) == 1)
    }

    @Test("http_open_connections counts the client connections open at scrape time")
    func openConnections() throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let idle = try (0..<3).map { _ in try RawHTTPClient(port: server.port) }
        defer { idle.forEach { $0.close() } }
        // Each idle connection has completed a request, so the server has surely accepted it.
        for client in idle {
            try client.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse().status == 200)
        }
        let metrics = try scrape(server)
        // The three idle keep-alive connections plus the scrape's own.
        #expect((metrics.value("http_open_connections") ?? 0) >= 4)
    }

    @Test("db_pool_connections by state and db_pool_waiting describe the request pool")
    func databasePool() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        _ = try server.request("GET", "/v1/categories", as: "metrics-pool")
        let metrics = try scrape(server)
        let inUse = try #require(metrics.value("db_pool_connections", ["state": "in_use"]))
        let idle = try #require(metrics.value("db_pool_connections", ["state": "idle"]))
        #expect(inUse >= 0 && idle >= 1)
        #expect(inUse + idle <= Double(server.configuration.databasePoolSize))
        #expect(metrics.samples(named: "db_pool_connections").count == 2)
        #expect(metrics.value("db_pool_waiting") == 0)
    }

    @Test("cleanup_jobs reports queued and failing clean-up jobs")
    func cleanupJobs() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        var metrics = try scrape(server)
        #expect(metrics.value("cleanup_jobs", ["state": "pending"]) == 0)
        #expect(metrics.value("cleanup_jobs", ["state": "failed"]) == 0)

        // Storage keeps failing, so the account's clean-up jobs stay queued and record failures.
        server.fake.failNext(.storageList, count: 10_000)
        server.fake.failNext(.storageDelete, count: 10_000)
        let token = try server.token(for: "metrics-cleanup", issuedAt: Date().timeIntervalSince1970 - 5)
        #expect(try server.request("GET", "/v1/users/me", token: token).status == 200)
        #expect(try server.request("DELETE", "/v1/users/me", token: token).status == 204)

        let deadline = ContinuousClock.now + .seconds(60)
        repeat {
            metrics = try scrape(server)
            if (metrics.value("cleanup_jobs", ["state": "failed"]) ?? 0) >= 1 { break }
            Thread.sleep(forTimeInterval: 0.1)
        } while ContinuousClock.now < deadline
        let failed = metrics.value("cleanup_jobs", ["state": "failed"]) ?? 0
        let pending = metrics.value("cleanup_jobs", ["state": "pending"]) ?? 0
        #expect(failed >= 1)
        // Three jobs were queued (two Storage folders, then the Auth account); none can finish.
        #expect(failed + pending == 3)
    }

    @Test("process_resident_memory_bytes is the process's resident set size")
    func residentMemory() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let metrics = try scrape(server)
        let bytes = try #require(metrics.value("process_resident_memory_bytes"))
        #expect(bytes > 1_000_000)
        #expect(bytes == bytes.rounded())
    }

    @Test("requests to /metrics itself are counted under their own route")
    func selfCounting() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        _ = try scrape(server)
        let metrics = try scrape(server)
        #expect(metrics.value("http_requests_total", ["method": "GET", "route": "/metrics", "status": "200"]) == 1)
    }
}
