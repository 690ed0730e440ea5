import FoundationEssentials
import Glibc
import Primitives

/// `locify-server healthcheck`: asks the server running beside it (same container, same
/// environment) whether it is ready, by a `GET /health/ready` on loopback, so a container
/// healthcheck needs no curl in the image. Exit status 0 when the answer is 200, else 1.
struct HealthCheck: Sendable {
    /// The address probed: 127.0.0.1, or `HOST` when it names one IPv4 address other than 0.0.0.0.
    var host: String
    /// The port probed: `PORT` (default 8080, as the server's).
    var port: UInt16
    /// How long connecting, sending and each read may take, seconds.
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

    /// Probes once: success when `/health/ready` answered 200, else what went wrong.
    func probe() -> Result<Void, HealthCheckFailure> {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return .failure(HealthCheckFailure("socket: \(Self.lastError())")) }
        defer { close(descriptor) }
        // On Linux the send timeout also bounds connect(), and the receive timeout each read.
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))

        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            return .failure(HealthCheckFailure("not an IPv4 address: \(host)"))
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            return .failure(HealthCheckFailure("cannot connect to \(host):\(port): \(Self.lastError())"))
        }

        let request = Array("GET /health/ready HTTP/1.1\r\nHost: \(host):\(port)\r\nConnection: close\r\n\r\n".utf8)
        var sent = 0
        while sent < request.count {
            let count = request[sent...].withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { return .failure(HealthCheckFailure("cannot send the request: \(Self.lastError())")) }
            sent += count
        }

        // Only the status line matters: read until its end (or the connection closes).
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1024)
        while !received.contains(UInt8(ascii: "\n")), received.count < 8192 {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count == 0 { break }
            guard count > 0 else { return .failure(HealthCheckFailure("no answer from \(host):\(port): \(Self.lastError())")) }
            received += buffer[..<count]
        }
        let statusLine = String(decoding: received.prefix { $0 != UInt8(ascii: "\r") && $0 != UInt8(ascii: "\n") }, as: UTF8.self)
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1.") else {
            return .failure(HealthCheckFailure("not an HTTP answer from \(host):\(port): \"\(statusLine.prefix(80))\""))
        }
        guard parts[1] == "200" else {
            return .failure(HealthCheckFailure("not ready: /health/ready answered \(statusLine)"))
        }
        return .success(())
    }

    private static func isIPv4(_ text: String) -> Bool {
        var address = in_addr()
        return inet_pton(AF_INET, text, &address) == 1
    }

    private static func lastError() -> String {
        errno == EAGAIN || errno == EWOULDBLOCK || errno == EINPROGRESS ? "timed out" : String(cString: strerror(errno))
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
