import FoundationEssentials
import Glibc
import HTTPClient
import Primitives

/// `locify-server healthcheck`: asks the server running beside it (same container, same
/// environment) whether it is ready, by a `GET /health/ready` on loopback, so a container
/// healthcheck needs no curl in the image. Exit status 0 when the answer is 200, else 1.
struct HealthCheck: Sendable {
    /// The address probed: 127.0.0.1, or `HOST` when it names one IPv4 address other than 0.0.0.0.
    var host: String
    /// The port probed: `PORT` (default 8080, as the server's).
    var port: UInt16
    /// How long the whole exchange (connecting, sending, reading the answer) may take, seconds.
    var timeoutSeconds: Int = 3

    /// The probe for the server configured by `environment`; a line saying why when `PORT` is invalid.
    static func fromEnvironment(_ environment: [String: String]) -> Result<HealthCheck, HealthCheckFailure> {
        let portText = environment["PORT"]?.trimmingWhitespaces() ?? ""
        let port: UInt16
        if portText.isEmpty {
            port = 8080
        } else if let value = UInt16(portText), value > 0 {
            port = value
        } else {
            return .failure(HealthCheckFailure("PORT must be a port from 1 to 65535, got \"\(portText)\""))
        }
        var host = "127.0.0.1"
        if let configured = environment["HOST"]?.trimmingWhitespaces(), configured != "0.0.0.0",
            Self.isIPv4(configured)
        {
            host = configured
        }
        return .success(HealthCheck(host: host, port: port))
    }

    /// Probes once through the server's HTTP client (`SocketHTTPTransport`, the one Google is
    /// called with): success when `/health/ready` answered 200, else what went wrong.
    func probe(transport: some HTTPTransport = SocketHTTPTransport()) -> Result<Void, HealthCheckFailure> {
        let request = TransportRequest(method: "GET", url: "http://\(host):\(port)/health/ready", timeout: Double(timeoutSeconds))
        let response: TransportResponse
        do {
            response = try transport.send(request)
        } catch let error as TransportError {
            return .failure(Self.failure(error, host: host, port: port))
        } catch {
            return .failure(HealthCheckFailure("no answer from \(host):\(port): \(error)"))
        }
        guard response.status == 200 else {
            // The server answers HTTP/1.1; the reader refuses anything but HTTP/1.x.
            let reason = response.reason.isEmpty ? "" : " \(response.reason)"
            return .failure(HealthCheckFailure("not ready: /health/ready answered HTTP/1.1 \(response.status)\(reason)"))
        }
        return .success(())
    }

    /// The line for a request that got no HTTP answer: the client's own "cannot connect to ..."
    /// when connecting failed, else "no answer from ..." and why.
    private static func failure(_ error: TransportError, host: String, port: UInt16) -> HealthCheckFailure {
        if error.message.hasPrefix("cannot connect to ") { return HealthCheckFailure(error.message) }
        if error.message == "invalid status line" { return HealthCheckFailure("not an HTTP answer from \(host):\(port)") }
        return HealthCheckFailure("no answer from \(host):\(port): \(error.isTimeout ? "timed out" : error.message)")
    }

    private static func isIPv4(_ text: String) -> Bool {
        var address = in_addr()
        return inet_pton(AF_INET, text, &address) == 1
    }
}

/// Why the health check failed, printed on standard error (Docker keeps it in the container's
/// health log).
struct HealthCheckFailure: Error, Sendable, CustomStringConvertible {
    var description: String

    init(_ description: String) { self.description = description }
}

/// Runs the health check for this process's environment and returns the exit status (0 ready, 1 not).
func runHealthCheck() -> Int32 {
    let result = HealthCheck.fromEnvironment(ProcessInfo.processInfo.environment).flatMap { $0.probe() }
    switch result {
    case .success:
        print("ready")
        return 0
    case .failure(let failure):
        writeToStandardError("locify-server healthcheck: \(failure)\n")
        return 1
    }
}
