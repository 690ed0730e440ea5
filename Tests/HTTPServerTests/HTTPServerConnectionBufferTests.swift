import Foundation
import Glibc
import HTTPServer
import Testing
import TestSupport

/// Issue 23 item 2: the bytes connections hold outside bodies (pipelined input read ahead,
/// responses queued for clients that do not read) stay under a server-wide budget: past it,
/// connections parse no further pipelined request until their output is written and read at
/// most 4 KiB at a time.
@Suite("HTTPServer: pipelined input and queued output stay under a global budget", .serialized)
struct HTTPServerConnectionBufferTests {
    private static let kibibyte = 1024
    private static let responseBody = [UInt8](repeating: 0x72, count: 4 * kibibyte)

    /// What one run measured: the peak of the server's buffered connection bytes over 3 s, how
    /// long a normal client then waited for its answer (nil: not answered within 10 s), and
    /// whether the count went back to 0 once the clients left.
    private struct Run: Sendable {
        var peak = 0
        var probe: Duration?
        var settled = false
    }

    private struct ConnectFailed: Error {}

    /// Opens `count` connections whose receive window is small (so the kernel holds little of
    /// what the server sends), sends each 64 KiB of pipelined requests for 4 KiB responses and
    /// reads nothing, against a server with `budget`; runs on a thread of its own.
    private func pipelineWithoutReading(count: Int, budget: Int) async throws -> Run {
        try await onOwnThread {
            let responder = HTTPClosureResponder(mode: { _ in .inline }) { request, _ in
                HTTPResponse(status: .ok, body: request.path == "/r" ? Self.responseBody : Array("small".utf8))
            }
            return try withHTTPTestServer(
                responder: responder,
                configure: {
                    $0.maxBufferedConnectionBytes = budget
                    $0.maxConnectionsPerAddress = 0
                }
            ) { server in
                var run = try Self.flood(server, count: count)
                // The clients are gone: every byte is given back.
                run.settled = eventually(timeout: .seconds(20)) { server.server.bufferedConnectionBytes == 0 }
                return run
            }
        }
    }

    private static func flood(_ server: HTTPTestServer, count: Int) throws -> Run {
        let requests = String(repeating: "GET /r HTTP/1.1\r\nHost: h\r\n\r\n", count: 64 * Self.kibibyte / 29)
        var clients: [Int32] = []
        defer { for fd in clients { Glibc.close(fd) } }
        for _ in 0..<count {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            var window: Int32 = 4096
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &window, socklen_t(MemoryLayout<Int32>.size))
            var sendBuffer: Int32 = 128 * 1024
            setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sendBuffer, socklen_t(MemoryLayout<Int32>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(server.port).bigEndian)
            inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            clients.append(fd)
            guard connected == 0 else { throw ConnectFailed() }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = requests.withCString { send(fd, $0, requests.utf8.count, Int32(MSG_NOSIGNAL)) }
        }
        var run = Run()
        let end = ContinuousClock.now + .seconds(3)
        while ContinuousClock.now < end {
            run.peak = max(run.peak, server.server.bufferedConnectionBytes)
            Thread.sleep(forTimeInterval: 0.01)
        }
        let started = ContinuousClock.now
        let served = (try? server.roundTrip("GET /small HTTP/1.1\r\nHost: h\r\n\r\n", timeout: .seconds(60)).status) == 200
        run.probe = served ? ContinuousClock.now - started : nil
        return run
    }

    @Test("500 clients pipelining 64 KiB of requests and reading nothing hold at most the budget plus 4 KiB and a response each")
    func pipeliningNonReaders() async throws {
        let count = 500
        try #require(raiseOpenFileLimit(to: 2 * count + 256) >= 2 * count + 256)
        let budget = 4 * 1024 * 1024
        let bounded = try await pipelineWithoutReading(count: count, budget: budget)
        let unbounded = try await pipelineWithoutReading(count: count, budget: 1 << 40)
        print(
            "pipelining non-readers: \(count) connections, buffered peak \(bounded.peak / 1024) KiB with a \(budget / 1024) KiB "
                + "budget (a normal request then took \(bounded.probe.map { "\($0)" } ?? "over 60 s")), \(unbounded.peak / 1024) KiB "
                + "without (\(unbounded.probe.map { "\($0)" } ?? "over 60 s"))")
        // Two loops may each read 64 KiB just before the total crosses the budget.
        let allowance = budget + 2 * 64 * Self.kibibyte + count * (4 * Self.kibibyte + Self.responseBody.count + 256)
        #expect(bounded.peak <= allowance)
        #expect(unbounded.peak > allowance, "the flood should hold more without the budget")
        #expect(bounded.probe != nil)
        #expect(bounded.settled && unbounded.settled)
    }
}
