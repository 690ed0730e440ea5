import FirebaseAdmin
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A one-shot HTTP responder on 127.0.0.1: accepts one connection, reads the request head and
/// body, answers with a canned response and closes. Enough to exercise URLSessionTransport.
final class OneShotHTTPServer: Sendable {
    let port: UInt16
    private let listener: Int32
    private let received = Mutex<[UInt8]>([])
    private let finished = DispatchSemaphore(value: 0)

    init(response: String) throws {
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
            serveOnce(response: Array(response.utf8))
        }
        thread.start()
    }

    private func serveOnce(response: [UInt8]) {
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
    }

    /// The raw request bytes, once the exchange is over (waits generously).
    func request() -> String {
        _ = finished.wait(timeout: .now() + 30)
        return String(decoding: received.withLock { $0 }, as: UTF8.self)
    }
}

@Suite("URLSessionTransport")
struct URLSessionTransportTests {
    @Test("sends method, headers and body and returns status, headers and body")
    func roundTrip() throws {
        let server = try OneShotHTTPServer(
            response: "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 9\r\nContent-Type: application/json\r\nContent-Length: 11\r\nConnection: close\r\n\r\n{\"ok\":true}")
        let transport = URLSessionTransport(timeout: 20)
        let response = try transport.send(
            TransportRequest(
                method: "POST", url: "http://127.0.0.1:\(server.port)/v1/projects/p/accounts:delete",
                headers: [("Authorization", "Bearer abc"), ("Content-Type", "application/json")], body: Array(#"{"localId":"u"}"#.utf8)))
        #expect(response.status == 429)
        #expect(response.header("retry-after") == "9")
        #expect(response.body == Array(#"{"ok":true}"#.utf8))
        let request = server.request()
        #expect(request.hasPrefix("POST /v1/projects/p/accounts:delete HTTP/1.1\r\n"))
        #expect(request.lowercased().contains("authorization: bearer abc\r\n"))
        #expect(request.hasSuffix(#"{"localId":"u"}"#))
    }

    @Test("a refused connection is a transport error, not a crash")
    func connectionRefused() {
        let transport = URLSessionTransport(timeout: 5)
        #expect(throws: TransportError.self) {
            try transport.send(TransportRequest(method: "GET", url: "http://127.0.0.1:1/nothing"))
        }
        #expect(throws: TransportError.self) { try transport.send(TransportRequest(method: "GET", url: "")) }
    }
}
