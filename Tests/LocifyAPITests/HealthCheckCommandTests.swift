import Foundation
import Glibc
import HTTPServer
import Postgres
import Testing
import TestSupport
import TestSupportDatabase
import TestSupportServer

/// `locify-server healthcheck` (issue 14), the container healthcheck of the Dockerfile and of
/// docker-compose.yml: the real binary, probing a real server process, a server that answers 503,
/// a port nobody listens on and a listener that never answers.
@Suite("locify-server healthcheck", .serialized)
struct HealthCheckCommandTests {
    @Test("exits 0 and prints ready while the server on PORT answers /health/ready; exits 1 once its database is gone")
    func readyServer() throws {
        let database = try TestDatabase.create(migrationsDirectory: ProjectPaths.migrations, poolSize: 1)
        var dropped = false
        defer { if !dropped { try? database.drop() } }
        let server = try ServerProcess.start(databaseURL: database.connectionString)
        defer { server.killHard() }

        let ready = try runHealthCheck(["PORT": "\(server.port)"])
        #expect(ready.status == 0, "stderr: \(ready.standardError)")
        #expect(ready.standardOutput == "ready\n")
        #expect(ready.standardError.isEmpty)

        // Without its database the server answers /health/ready with 503 S003, and the probe fails.
        try database.drop()
        dropped = true
        var last: ProcessRun?
        let failed = try eventually(timeout: .seconds(30)) {
            last = try runHealthCheck(["PORT": "\(server.port)"])
            return last?.status == 1
        }
        #expect(failed, "last run: \(String(describing: last))")
        #expect(last?.standardError.contains("not ready: /health/ready answered HTTP/1.1 503") == true, "\(String(describing: last))")
    }

    @Test("exits 1 when /health/ready answers anything but 200")
    func notReady() throws {
        let responder = HTTPClosureResponder { request, _ in
            HTTPResponse(status: request.path == "/health/ready" ? .serviceUnavailable : .ok)
        }
        let server = try HTTPTestServer(responder: responder)
        defer { server.stop() }

        let run = try runHealthCheck(["PORT": "\(server.port)", "HOST": "0.0.0.0"])
        #expect(run.status == 1)
        #expect(run.standardOutput.isEmpty)
        #expect(run.standardError == "locify-server healthcheck: not ready: /health/ready answered HTTP/1.1 503 Service Unavailable\n")
    }

    @Test("probes HOST when it names one IPv4 address, 127.0.0.1 otherwise")
    func probesConfiguredHost() throws {
        let responder = HTTPClosureResponder { _, _ in HTTPResponse(status: .ok) }
        // The same port on 127.0.0.1 is held (bound, never listening) so that no server of a test
        // running in parallel can listen there: the loopback probe must find nothing.
        var attempt: (server: HTTPTestServer, held: Int32)?
        for _ in 0..<20 where attempt == nil {
            let candidate = try HTTPTestServer(responder: responder) { $0.host = "127.0.0.2" }
            if let held = try? Self.boundSocket(port: candidate.port) {
                attempt = (candidate, held)
            } else {
                candidate.stop()
            }
        }
        guard let (server, held) = attempt else {
            Issue.record("no port free on both 127.0.0.2 and 127.0.0.1")
            return
        }
        defer {
            server.stop()
            close(held)
        }

        let configured = try runHealthCheck(["PORT": "\(server.port)", "HOST": "127.0.0.2"])
        #expect(configured.status == 0, "\(configured)")
        let loopback = try runHealthCheck(["PORT": "\(server.port)", "HOST": "localhost"])
        #expect(loopback.status == 1)
        #expect(loopback.standardError.hasPrefix("locify-server healthcheck: cannot connect to 127.0.0.1:\(server.port)"), "\(loopback)")
    }

    @Test("exits 1 when nothing listens on PORT")
    func nothingListening() throws {
        let port = try Self.closedPort()
        let run = try runHealthCheck(["PORT": "\(port)"])
        #expect(run.status == 1)
        #expect(run.standardError.hasPrefix("locify-server healthcheck: cannot connect to 127.0.0.1:\(port)"), "\(run.standardError)")
    }

    @Test("exits 1 within its timeout when the listener never answers")
    func silentListener() throws {
        let (descriptor, port) = try Self.listeningSocket()
        defer { close(descriptor) }
        let started = ContinuousClock.now
        let run = try runHealthCheck(["PORT": "\(port)"])
        let elapsed = ContinuousClock.now - started
        #expect(run.status == 1)
        #expect(run.standardError.contains("no answer from 127.0.0.1:\(port): timed out"), "\(run.standardError)")
        // The probe gives up after 3 s; a generous bound for a busy machine.
        #expect(elapsed < .seconds(20), "took \(elapsed)")
    }

    @Test("exits 1 with the reason when PORT is not a port")
    func invalidPort() throws {
        let run = try runHealthCheck(["PORT": "eighty"])
        #expect(run.status == 1)
        #expect(run.standardError == "locify-server healthcheck: PORT must be a port from 1 to 65535, got \"eighty\"\n")
    }

    /// One `locify-server healthcheck` run with only `environment` (no DATABASE_URL: the probe must not need it).
    private func runHealthCheck(_ environment: [String: String]) throws -> ProcessRun {
        try runProcess([try ServerProcess.binaryPath(), "healthcheck"], environment: environment)
    }

    /// A loopback port that was just bound and released, so nothing listens on it.
    private static func closedPort() throws -> Int {
        let (descriptor, port) = try listeningSocket()
        close(descriptor)
        return port
    }

    /// A socket listening on 127.0.0.1 that never accepts: connections complete in the kernel's
    /// backlog and then hear nothing.
    private static func listeningSocket() throws -> (Int32, Int) {
        let descriptor = try boundSocket(port: 0)
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard named == 0, listen(descriptor, 8) == 0 else {
            close(descriptor)
            throw TestDatabaseError("cannot listen: errno \(errno)")
        }
        return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// A TCP socket bound to 127.0.0.1:`port` (0: any free port), not listening: while it is open
    /// nobody else can listen on that address, and connections to it are refused.
    private static func boundSocket(port: Int) throws -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw TestDatabaseError("socket failed: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else {
            close(descriptor)
            throw TestDatabaseError("cannot bind 127.0.0.1:\(port): errno \(errno)")
        }
        return descriptor
    }
}
