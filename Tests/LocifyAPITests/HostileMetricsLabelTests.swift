import Primitives
import Foundation
import HTTPServer
import Testing
import TestSupport

@testable import LocifyAPI
import TestSupportServer
import TestSupportDatabase

/// Issue 13 item 1: metric labels come from closed sets, so made-up methods and paths cannot
/// add series (nor memory) for the life of the process.
@Suite("Hostile input: metric labels are bounded", .serialized)
struct HostileMetricsLabelTests {
    /// A method token of 12 random letters (never one of the known methods).
    static func randomMethod(_ generator: inout SeededGenerator) -> String {
        "X" + String((0..<11).map { _ in Character(UnicodeScalar(UInt8.random(in: 65...90, using: &generator))) })
    }

    @Test("50,000 requests with distinct random methods and paths add fewer than 200 series and under 5 MB of RSS")
    func randomMethodsAndPaths() throws {
        let database = try TestDatabase.create(migrationsDirectory: ProjectPaths.migrations, poolSize: 1)
        defer { try? database.drop() }
        // The per-address limit of failed requests is off: every request here is a 404 or 405.
        let server = try ServerProcess.start(
            databaseURL: database.connectionString,
            environment: ["LOCIFY_ADDRESS_RATE_LIMIT_PER_SECOND": "0", "LOG_LEVEL": "warning"])
        defer { server.killHard() }
        let port = server.port
        // Warm-up with known methods, so allocator pools and connection buffers exist before the baseline.
        _ = try PipelinedFlood.send(port: port, count: 5_000) { index in
            "GET /warm/\(index) HTTP/1.1\r\nHost: x\r\n\r\n"
        }
        let before = server.residentBytes

        let started = ContinuousClock.now
        // In ten rounds of 5,000, so this process does not hold 50,000 responses at once (other
        // tests in this process measure their own RSS meanwhile).
        var answered = 0
        var allRefused = true
        for round in 0..<10 {
            let responses = try PipelinedFlood.send(port: port, count: 5_000) { offset in
                let index = round * 5_000 + offset
                var generator = SeededGenerator(seed: UInt64(index) &+ 1)
                let method = Self.randomMethod(&generator)
                // Every 5th request hits a real path (405), the others a random one (404).
                let path = index % 5 == 0 ? "/v1/categories" : "/r\(index)/\(UInt64.random(in: 0...UInt64.max, using: &generator))"
                return "\(method) \(path) HTTP/1.1\r\nHost: x\r\n\r\n"
            }
            answered += responses.count
            allRefused = allRefused && responses.allSatisfy { $0.status == 404 || $0.status == 405 }
        }
        let elapsed = ContinuousClock.now - started
        #expect(answered == 50_000)
        #expect(allRefused)
        let after = server.residentBytes

        let metrics = try server.request("GET", "/metrics")
        #expect(metrics.status == 200)
        let series = metrics.text.split(separator: "\n").filter { !$0.hasPrefix("#") }
        let methods = Set(
            series.filter { $0.hasPrefix("http_requests_total{") }.compactMap { line -> Substring? in
                guard let start = line.range(of: "method=\"")?.upperBound, let end = line[start...].firstIndex(of: "\"") else { return nil }
                return line[start..<end]
            })
        print("metric labels: \(series.count) series, methods \(methods.sorted()), RSS \(before / 1024) KiB -> \(after / 1024) KiB (+\((after - before) / 1024) KiB), 50,000 requests in \(elapsed)")
        #expect(series.count < 200, "series: \(series.count)")
        // How long a scrape takes the server (its own histogram): why /metrics runs on a worker.
        for _ in 0..<20 { _ = try server.request("GET", "/metrics") }
        let scrapes = try PrometheusText(try server.request("GET", "/metrics").text)
        let count = scrapes.value("http_request_duration_seconds_count", ["route": "/metrics"]) ?? 0
        let sum = scrapes.value("http_request_duration_seconds_sum", ["route": "/metrics"]) ?? 0
        let underOneMillisecond = scrapes.value("http_request_duration_seconds_bucket", ["route": "/metrics", "le": "0.001"]) ?? 0
        print("metric labels: /metrics answered in \(count > 0 ? sum / count * 1000 : 0) ms on average, \(Int(underOneMillisecond)) of \(Int(count)) within 1 ms")
        #expect(methods.isSubset(of: ["GET", "other"]), "\(methods)")
        // Under a sanitizer the server is built with it too, and its quarantine and shadow memory
        // grow with every request whatever the labels: the series count is the check there.
        if !SanitizerDetection.isActive {
            #expect(after - before < 5 * 1024 * 1024, "RSS grew by \((after - before) / 1024) KiB")
        }
    }

    @Test("the method label is the method when known and other otherwise")
    func methodLabel() {
        for method in ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "CONNECT"] {
            #expect(Metrics.methodLabel(method) == method)
        }
        for method in ["get", "PROPFIND", "XYZ", String(repeating: "A", count: 8000)] {
            #expect(Metrics.methodLabel(method) == "other")
        }
    }

    @Test("/metrics runs on a worker, not on an I/O thread; /health stays inline")
    func metricsOffTheEventLoop() {
        var router = Router<Route>()
        OperationsRoutes(
            draining: Readiness(), readiness: ReadinessCache(clock: .system, probe: { true }), metrics: { "" }, openAPIDocument: nil,
            authEmulatorMode: false
        ).register(in: &router)
        func execution(_ path: String) -> Route.Execution? {
            guard case .found(let route, _, _) = router.match(.GET, path: path) else { return nil }
            return route.execution
        }
        #expect(execution("/metrics") == .worker)
        #expect(execution("/health/ready") == .worker)
        #expect(execution("/health") == .inline)
    }
}
