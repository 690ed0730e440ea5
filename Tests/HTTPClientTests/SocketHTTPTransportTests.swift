import HTTPClient
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A one-shot HTTP responder on 127.0.0.1: accepts one connection, reads the request head and
/// body, answers with canned bytes and closes (or, with `holdOpen`, keeps the connection open
/// without closing for that long). Enough to exercise SocketHTTPTransport byte by byte.
final class OneShotHTTPServer: Sendable {
    let port: UInt16
    private let listener: Int32
    private let received = Mutex<[UInt8]>([])
    private let finished = DispatchSemaphore(value: 0)

    convenience init(response: String, holdOpen: Double = 0) throws {
        try self.init(bytes: Array(response.utf8), holdOpen: holdOpen)
    }

    init(bytes response: [UInt8], holdOpen: Double = 0) throws {
        let socketDescriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketDescriptor >= 0 else { throw TransportError("socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socketDescriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(socketDescriptor, 1) == 0 else {
            close(socketDescriptor)
            throw TransportError("bind/listen failed")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socketDescriptor, $0, &length) }
        }
        port = UInt16(bigEndian: address.sin_port)
        listener = socketDescriptor
        let thread = Thread { [self] in
            serveOnce(response: response, holdOpen: holdOpen)
        }
        thread.start()
    }

    private func serveOnce(response: [UInt8], holdOpen: Double) {
        defer {
            close(listener)
            finished.signal()
        }
        let connection = accept(listener, nil, nil)
        guard connection >= 0 else { return }
        defer { close(connection) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        var request: [UInt8] = []
        while true {
            let count = recv(connection, &buffer, buffer.count, 0)
            if count <= 0 { break }
            request += buffer[0..<count]
            let text = String(decoding: request, as: UTF8.self)
            guard let headEnd = text.range(of: "\r\n\r\n") else { continue }
            let head = text[..<headEnd.lowerBound].lowercased()
            var bodyLength = 0
            if let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }) {
                bodyLength = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? 0
            }
            if request.count >= text.utf8.distance(from: text.utf8.startIndex, to: headEnd.upperBound) + bodyLength { break }
        }
        received.withLock { $0 = request }
        _ = response.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if holdOpen > 0 { Thread.sleep(forTimeInterval: holdOpen) }
    }

    /// The raw request bytes, once the exchange is over (waits generously).
    func request() -> String {
        _ = finished.wait(timeout: .now() + 30)
        return String(decoding: received.withLock { $0 }, as: UTF8.self)
    }
}

@Suite("SocketHTTPTransport: HTTP/1.1 over loopback")
struct SocketHTTPTransportTests {
    private func get(_ server: OneShotHTTPServer, method: String = "GET", timeout: Double = 10) throws -> TransportResponse {
        try SocketHTTPTransport(timeout: timeout).send(TransportRequest(method: method, url: "http://127.0.0.1:\(server.port)/x"))
    }

    @Test("sends method, headers and body as given and returns status, headers in order and a Content-Length body")
    func roundTrip() throws {
        let server = try OneShotHTTPServer(
            response:
                "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 9\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nContent-Type: application/json\r\nContent-Length: 11\r\nConnection: close\r\n\r\n{\"ok\":true}"
        )
        let transport = SocketHTTPTransport(timeout: 20)
        let response = try transport.send(
            TransportRequest(
                method: "POST", url: "http://127.0.0.1:\(server.port)/v1/projects/p/accounts:delete?alt=json#fragment",
                headers: [("Authorization", "Bearer abc"), ("Content-Type", "application/json")], body: Array(#"{"localId":"u"}"#.utf8)))
        #expect(response.status == 429)
        #expect(response.header("retry-after") == "9")
        #expect(response.headers.map(\.0) == ["Retry-After", "Set-Cookie", "Set-Cookie", "Content-Type", "Content-Length", "Connection"])
        #expect(response.headers.filter { $0.0 == "Set-Cookie" }.map(\.1) == ["a=1", "b=2"])
        #expect(response.body == Array(#"{"ok":true}"#.utf8))
        let request = server.request()
        #expect(
            request == "POST /v1/projects/p/accounts:delete?alt=json HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\n"
                + "Authorization: Bearer abc\r\nContent-Type: application/json\r\nContent-Length: 15\r\nConnection: close\r\n\r\n"
                + #"{"localId":"u"}"#)
    }

    @Test("a chunked body is reassembled; chunk extensions and trailer fields are skipped")
    func chunked() throws {
        let server = try OneShotHTTPServer(
            response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;name=value\r\nhello\r\n7\r\n, world\r\nA ; x=\"y\"\r\n0123456789\r\n0;last\r\nX-Trailer: t\r\n\r\n"
        )
        let response = try get(server)
        #expect(response.status == 200)
        #expect(String(decoding: response.body, as: UTF8.self) == "hello, world0123456789")
        #expect(response.header("x-trailer") == nil)
    }

    @Test("without Content-Length or chunked coding the body runs until the server closes")
    func untilClose() throws {
        let server = try OneShotHTTPServer(response: "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nall of this\r\nuntil the end")
        let response = try get(server)
        #expect(response.status == 200)
        #expect(String(decoding: response.body, as: UTF8.self) == "all of this\r\nuntil the end")
    }

    @Test("204 and 304 have no body even while the connection stays open, and neither has a HEAD answer")
    func noBody() throws {
        for status in ["204 No Content", "304 Not Modified"] {
            let server = try OneShotHTTPServer(response: "HTTP/1.1 \(status)\r\nETag: \"e\"\r\n\r\n", holdOpen: 5)
            let started = ContinuousClock.now
            let response = try get(server, timeout: 4)
            #expect(response.status == Int(status.prefix(3)))
            #expect(response.body.isEmpty)
            #expect(ContinuousClock.now - started < .seconds(3))
        }
        let server = try OneShotHTTPServer(response: "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", holdOpen: 5)
        let response = try get(server, method: "HEAD", timeout: 4)
        #expect(response.status == 200)
        #expect(response.header("content-length") == "1000")
        #expect(response.body.isEmpty)
    }

    @Test("interim 1xx responses are skipped and the final answer returned")
    func interim() throws {
        let server = try OneShotHTTPServer(
            response: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok")
        let response = try get(server)
        #expect(response.status == 201)
        #expect(response.header("link") == nil)
        #expect(response.body == Array("ok".utf8))
    }

    @Test("a response head over 64 KiB is refused")
    func headTooLarge() throws {
        let filler = String(repeating: "a", count: 1000)
        let fields = (0..<70).map { "X-Filler-\($0): \(filler)\r\n" }.joined()
        let server = try OneShotHTTPServer(response: "HTTP/1.1 200 OK\r\n\(fields)Content-Length: 0\r\n\r\n")
        let error = #expect(throws: TransportError.self) { try get(server) }
        #expect(error?.isTimeout == false)
        #expect(error?.message.contains("64") == true || error?.message.contains("head") == true)
    }

    @Test("a body over 16 MiB is refused, announced or not")
    func bodyTooLarge() throws {
        let announced = try OneShotHTTPServer(response: "HTTP/1.1 200 OK\r\nContent-Length: 16777217\r\n\r\n", holdOpen: 5)
        let error = #expect(throws: TransportError.self) { try get(announced, timeout: 4) }
        #expect(error?.message.contains("larger") == true)
        let body = [UInt8](repeating: 0x61, count: 16 * 1024 * 1024 + 1)
        let streamed = try OneShotHTTPServer(bytes: Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1000001\r\n".utf8) + body)
        let chunkError = #expect(throws: TransportError.self) { try get(streamed) }
        #expect(chunkError?.message.contains("larger") == true)
    }

    @Test("malformed answers are transport errors: status line, Content-Length, chunk size, early close")
    func malformed() throws {
        for response in [
            "HTTP/2 200 OK\r\n\r\n", "ICY 200 OK\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 3, 4\r\n\r\nabc",
            "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", "HTTP/1.1 200 OK\r\n folded: x\r\n\r\n", "HTTP/1.1 200 OK\r\nContent",
        ] {
            let server = try OneShotHTTPServer(response: response)
            let error = #expect(throws: TransportError.self, "\(response)") { try get(server) }
            #expect(error?.isTimeout == false)
        }
    }

    @Test("a server that never answers times out within the request's bound")
    func neverAnswers() throws {
        let server = try OneShotHTTPServer(response: "", holdOpen: 10)
        let started = ContinuousClock.now
        let error = #expect(throws: TransportError.self) {
            try SocketHTTPTransport(timeout: 30).send(TransportRequest(method: "GET", url: "http://127.0.0.1:\(server.port)/", timeout: 0.5))
        }
        #expect(error?.isTimeout == true)
        let elapsed = ContinuousClock.now - started
        #expect(elapsed >= .milliseconds(450) && elapsed < .seconds(5))
    }

    @Test("a server that stops halfway through the body times out too")
    func stallsMidBody() throws {
        let server = try OneShotHTTPServer(response: "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial", holdOpen: 10)
        let error = #expect(throws: TransportError.self) { try get(server, timeout: 0.5) }
        #expect(error?.isTimeout == true)
    }

    @Test("a refused connection is a transport error, not a timeout")
    func connectionRefused() {
        let transport = SocketHTTPTransport(timeout: 5)
        let error = #expect(throws: TransportError.self) {
            try transport.send(TransportRequest(method: "GET", url: "http://127.0.0.1:1/nothing"))
        }
        #expect(error?.isTimeout == false)
    }

    @Test("URLs other than absolute http(s) ones, and header fields with line breaks, are refused before connecting")
    func refusedRequests() {
        let transport = SocketHTTPTransport(timeout: 5)
        for url in [
            "", "ftp://example.com/", "file:///etc/passwd", "http://", "http://user@127.0.0.1:1/", "http://127.0.0.1:0/",
            "http://127.0.0.1:65536/", "http://127.0.0.1:8a/", "http://exa mple.com/", "http://[::1/", "http://[zz]/", "//example.com/",
        ] {
            #expect(throws: TransportError.self, "\(url)") { try transport.send(TransportRequest(method: "GET", url: url)) }
        }
        #expect(throws: TransportError.self) {
            try transport.send(TransportRequest(method: "GET", url: "http://127.0.0.1:1/", headers: [("X", "a\r\nInjected: yes")]))
        }
        #expect(throws: TransportError.self) { try transport.send(TransportRequest(method: "GET /x", url: "http://127.0.0.1:1/")) }
    }

    @Test("a URL without a path asks for /; an IPv6 literal is connected to (refused here: nothing listens)")
    func ipv6AndDefaults() throws {
        let server = try OneShotHTTPServer(response: "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        _ = try SocketHTTPTransport(timeout: 10).send(TransportRequest(method: "GET", url: "HTTP://127.0.0.1:\(server.port)?q=1"))
        #expect(server.request().hasPrefix("GET /?q=1 HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\n"))
        let refused = #expect(throws: TransportError.self) { try SocketHTTPTransport(timeout: 5).send(TransportRequest(method: "GET", url: "http://[::1]:1/")) }
        #expect(refused?.isTimeout == false)
    }
}
