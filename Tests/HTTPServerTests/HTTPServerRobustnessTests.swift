import Foundation
import HTTPServer
import Testing
import TestSupport

/// Sends one simple request on a new connection and expects 200: the server still serves.
func expectStillServing(_ server: HTTPTestServer, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let response = try server.roundTrip("GET /alive HTTP/1.1\r\nHost: h\r\n\r\n")
    #expect(response.status == 200, sourceLocation: sourceLocation)
}

@Suite("HTTPServer: hostile and broken clients")
struct HTTPServerRobustnessTests {
    @Test("garbage bytes get 400 and close; the server still serves")
    func garbage() throws {
        try withHTTPTestServer { server in
            // Seeded, so a failure replays: the same 20 inputs on every run.
            var generator = SeededGenerator(seed: 0x16_07)
            for round in 0..<20 {
                let client = try server.client()
                let garbage = (0..<Int.random(in: 1...2000, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
                try? client.send(garbage + [13, 10, 13, 10])
                let response = try client.readResponse()
                #expect(response.status == 400, "round \(round): \(response.status) \(response.reason)")
                #expect(response.headers["Connection"]?.lowercased() == "close", "round \(round)")
                #expect(client.waitForClose(), "round \(round): the connection stayed open after the 400")
            }
            try expectStillServing(server)
        }
    }

    @Test("random splits and mutations of valid requests never crash the server")
    func fuzz() throws {
        let valid = Array(
            "POST /v1/x?a=b HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\n\r\n5;e=1\r\nhello\r\n0\r\nT: 1\r\n\r\n".utf8)
        try withHTTPTestServer(configure: { $0.headerReadTimeout = .milliseconds(300) }) { server in
            var generator = SystemRandomNumberGenerator()
            for _ in 0..<60 {
                var bytes = valid
                for _ in 0..<Int.random(in: 1...4, using: &generator) {
                    let position = Int.random(in: 0..<bytes.count, using: &generator)
                    switch Int.random(in: 0..<3, using: &generator) {
                    case 0: bytes[position] = UInt8.random(in: 0...255, using: &generator)
                    case 1: bytes.remove(at: position)
                    default: bytes.insert(UInt8.random(in: 0...255, using: &generator), at: position)
                    }
                }
                let client = try server.client()
                var offset = 0
                while offset < bytes.count {
                    let end = min(bytes.count, offset + Int.random(in: 1...40, using: &generator))
                    try? client.send(Array(bytes[offset..<end]))
                    offset = end
                }
                client.reset()
            }
            try expectStillServing(server)
        }
    }

    @Test("a half-sent request followed by a close is dropped; the server still serves")
    func halfRequestThenClose() throws {
        try withHTTPTestServer { server in
            for partial in ["GET / HT", "GET / HTTP/1.1\r\nHost: h\r\n", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc"] {
                let client = try server.client()
                try client.send(partial)
                client.close()
                let resetting = try server.client()
                try resetting.send(partial)
                resetting.reset()
            }
            try expectStillServing(server)
            #expect(eventually { server.server.openConnections == 0 })
        }
    }

    @Test("a client that resets in the middle of a large response does not hurt the server (EPIPE/ECONNRESET)")
    func resetMidResponse() throws {
        let big = [UInt8](repeating: 0x7A, count: 8 * 1024 * 1024)
        let responder = HTTPClosureResponder { request, _ in
            request.path == "/big" ? HTTPResponse(status: .ok, body: big) : HTTPResponse(status: .ok)
        }
        try withHTTPTestServer(responder: responder) { server in
            for _ in 0..<5 {
                let client = try server.client()
                try client.send("GET /big HTTP/1.1\r\nHost: h\r\n\r\n")
                var descriptor = pollfd(fd: client.fd, events: Int16(POLLIN), revents: 0)
                _ = poll(&descriptor, 1, 5000)
                client.reset()
            }
            try expectStillServing(server)
            #expect(eventually { server.server.openConnections == 0 })
        }
    }

    @Test("many abrupt clients leave no descriptor behind")
    func noDescriptorLeak() throws {
        let responder = HTTPClosureResponder { request, _ in
            HTTPResponse(status: .ok, body: [UInt8](repeating: 0x41, count: request.path == "/big" ? 1_000_000 : 10))
        }
        try withHTTPTestServer(responder: responder, configure: { $0.headerReadTimeout = .milliseconds(500) }) { server in
            let port = server.port
            // /proc/net/tcp is not read atomically: while other tests open thousands of connections a
            // read can miss the listening socket, so the count is looked at until it shows.
            #expect(eventually { HTTPSocketInspector.serverSideSocketCount(port: port) == 1 }, "only the listening socket")
            for round in 0..<200 {
                let client = try server.client()
                switch round % 6 {
                case 0: client.close()
                case 1:
                    try? client.send("GET / HTTP/1.1\r\nHo")
                    client.reset()
                case 2:
                    try? client.send("GET /big HTTP/1.1\r\nHost: h\r\n\r\n")
                    client.reset()
                case 3:
                    try? client.send([0, 1, 2, 3, 13, 10, 13, 10])
                    client.close()
                case 4:
                    try? client.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
                    _ = try? client.readResponse()
                    client.close()
                default:
                    try? client.send("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\nabc")
                    client.shutdownWrite()
                    client.close()
                }
            }
            try expectStillServing(server)
            #expect(eventually(timeout: .seconds(20)) { server.server.openConnections == 0 })
            #expect(eventually { HTTPSocketInspector.serverSideSocketCount(port: port) == 1 })
        }
    }
}
