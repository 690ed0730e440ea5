import FoundationEssentials
import Glibc
import Locify
import Synchronization

/// The server's Prometheus metrics (openapi.yaml): requests by method, route and
/// status, a latency histogram per route, and gauges sampled when `/metrics` is scraped. Every
/// label comes from a closed set (`methodLabel`, the route table or `unmatched`, the statuses the
/// server answers), so no client can make the series count, or the memory, grow.
final class Metrics: Sendable {
    /// The `method` label values: the methods of RFC 9110 and PATCH; every other token is `other`.
    static let knownMethods: Set<String> = ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "CONNECT"]

    /// The `method` label of a request method: itself when known, else `other` (the parser
    /// accepts any well-formed token, up to the 8 KiB request line).
    static func methodLabel(_ method: String) -> String {
        knownMethods.contains(method) ? method : "other"
    }

    /// Upper bounds of the latency histogram buckets, seconds.
    static let buckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    private struct RequestKey: Hashable {
        var method: String
        var route: String
        var status: Int
    }

    private struct Histogram {
        var counts = [Int](repeating: 0, count: Metrics.buckets.count)
        var total = 0
        var sum = 0.0
    }

    private struct State {
        var requests: [RequestKey: Int] = [:]
        var latency: [String: Histogram] = [:]
    }

    private let state = Mutex(State())

    /// Counts one finished request, and its latency unless `seconds` is nil (a request that
    /// waited for a change, as long as its client asked). `route` must be a route-table pattern or
    /// `unmatched`.
    func record(method: String, route: String, status: Int, seconds: Double?) {
        let method = Self.methodLabel(method)
        state.withLock { state in
            state.requests[RequestKey(method: method, route: route, status: status), default: 0] += 1
            guard let seconds else { return }
            let bucket = Metrics.buckets.firstIndex { seconds <= $0 }
            var histogram = state.latency[route] ?? Histogram()
            if let bucket { histogram.counts[bucket] += 1 }
            histogram.total += 1
            histogram.sum += seconds
            state.latency[route] = histogram
        }
    }

    /// Gauges read at scrape time.
    typealias Gauges = MetricsGauges

    /// The exposition in Prometheus text format 0.0.4.
    func render(_ gauges: Gauges) -> String {
        let snapshot = state.withLock { $0 }
        var out = ""
        out += "# HELP http_requests_total Requests answered, by method, route pattern and status.\n"
        out += "# TYPE http_requests_total counter\n"
        for (key, count) in snapshot.requests.sorted(by: { ($0.key.route, $0.key.method, $0.key.status) < ($1.key.route, $1.key.method, $1.key.status) }) {
            out += "http_requests_total{method=\"\(Self.escape(key.method))\",route=\"\(Self.escape(key.route))\",status=\"\(key.status)\"} \(count)\n"
        }
        out += "# HELP http_request_duration_seconds Time from a complete request to its response, by route pattern.\n"
        out += "# TYPE http_request_duration_seconds histogram\n"
        for (route, histogram) in snapshot.latency.sorted(by: { $0.key < $1.key }) {
            let label = Self.escape(route)
            var cumulative = 0
            for (index, bound) in Metrics.buckets.enumerated() {
                cumulative += histogram.counts[index]
                out += "http_request_duration_seconds_bucket{route=\"\(label)\",le=\"\(bound)\"} \(cumulative)\n"
            }
            out += "http_request_duration_seconds_bucket{route=\"\(label)\",le=\"+Inf\"} \(histogram.total)\n"
            out += "http_request_duration_seconds_sum{route=\"\(label)\"} \(histogram.sum)\n"
            out += "http_request_duration_seconds_count{route=\"\(label)\"} \(histogram.total)\n"
        }
        out += "# HELP http_open_connections Client connections currently open.\n"
        out += "# TYPE http_open_connections gauge\n"
        out += "http_open_connections \(gauges.openConnections)\n"
        out += "# HELP db_pool_connections Database pool connections by state.\n"
        out += "# TYPE db_pool_connections gauge\n"
        out += "db_pool_connections{state=\"in_use\"} \(gauges.poolInUse)\n"
        out += "db_pool_connections{state=\"idle\"} \(gauges.poolIdle)\n"
        out += "# HELP db_pool_waiting Requests waiting for a database connection.\n"
        out += "# TYPE db_pool_waiting gauge\n"
        out += "db_pool_waiting \(gauges.poolWaiting)\n"
        out += "# HELP cleanup_jobs Durable clean-up jobs queued, by state (failed: last attempt failed, will retry; failed_permanent: never retried).\n"
        out += "# TYPE cleanup_jobs gauge\n"
        out += "cleanup_jobs{state=\"pending\"} \(gauges.cleanupPending)\n"
        out += "cleanup_jobs{state=\"failed\"} \(gauges.cleanupFailed)\n"
        out += "cleanup_jobs{state=\"failed_permanent\"} \(gauges.cleanupFailedPermanent)\n"
        out += "# HELP cleanup_jobs_skipped_total Storage clean-ups skipped because the object name cannot exist, by reason.\n"
        out += "# TYPE cleanup_jobs_skipped_total counter\n"
        for skipped in gauges.cleanupSkipped {
            out += "cleanup_jobs_skipped_total{reason=\"\(Self.escape(skipped.reason))\"} \(skipped.count)\n"
        }
        out += "# HELP auth_emulator_mode 1 when unsigned Firebase Auth emulator tokens are accepted (never in production).\n"
        out += "# TYPE auth_emulator_mode gauge\n"
        out += "auth_emulator_mode \(gauges.authEmulatorMode ? 1 : 0)\n"
        if let live = gauges.live {
            out += "# HELP live_waiting_requests Pulls waiting for a change of their user (long-poll).\n"
            out += "# TYPE live_waiting_requests gauge\n"
            out += "live_waiting_requests \(live.waiting)\n"
            out += "# HELP live_wakeups_total Waiting pulls woken to read the feed again (a change of their user, or the listener reconnected).\n"
            out += "# TYPE live_wakeups_total counter\n"
            out += "live_wakeups_total \(live.wakeUps)\n"
            out += "# HELP live_notifications_total Change notifications received from PostgreSQL (LISTEN locify_changes).\n"
            out += "# TYPE live_notifications_total counter\n"
            out += "live_notifications_total \(live.notifications)\n"
            out += "# HELP live_notifications_sent_total Change notifications sent (users whose writes committed here).\n"
            out += "# TYPE live_notifications_sent_total counter\n"
            out += "live_notifications_sent_total \(live.notificationsSent)\n"
            out += "# HELP live_listen_reconnects_total Times the LISTEN connection was re-established (every waiting pull is woken then).\n"
            out += "# TYPE live_listen_reconnects_total counter\n"
            out += "live_listen_reconnects_total \(live.listenReconnects)\n"
            out += "# HELP live_listen_connected 1 while the LISTEN connection is up.\n"
            out += "# TYPE live_listen_connected gauge\n"
            out += "live_listen_connected \(live.isListening ? 1 : 0)\n"
        }
        out += "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
        out += "# TYPE process_resident_memory_bytes gauge\n"
        out += "process_resident_memory_bytes \(Self.residentMemoryBytes())\n"
        return out
    }

    /// Label values escape backslash, double quote and line feed.
    private static func escape(_ value: String) -> String {
        var escaped = ""
        escaped.unicodeScalars.reserveCapacity(value.unicodeScalars.count)
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    /// Resident pages (second field of /proc/self/statm) times the page size.
    static func residentMemoryBytes() -> Int {
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = statm.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
