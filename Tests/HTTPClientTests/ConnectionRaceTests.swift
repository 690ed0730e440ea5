import Foundation
import Testing

@testable import HTTPClient

#if canImport(Glibc)
import Glibc
#endif

/// Issue 23, item 5: the TLS client's connects race the host's addresses (RFC 8305), so an
/// address that never answers (a host resolving IPv6 first with IPv6 black-holed) costs the
/// connection attempt delay, not every key fetch.
@Suite("SocketHTTPTransport: an address that never answers does not fail the request")
struct ConnectionRaceTests {
    /// A loopback address whose SYNs are dropped: a listener with a backlog of 0 whose accept
    /// queue is full (Linux drops a SYN to a full queue), as a black-holed route does.
    final class BlackHole {
        let port: UInt16
        private let listener: Int32
        private var fillers: [Int32] = []

        init() throws {
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = Self.loopback(port: 0)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard descriptor >= 0, bound == 0, listen(descriptor, 0) == 0 else { throw TransportError("cannot listen") }
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
            }
            listener = descriptor
            port = UInt16(bigEndian: address.sin_port)
            // Connect until one connect does not complete: the queue is full from then on.
            for _ in 0..<16 {
                let filler = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
                fillers.append(filler)
                var target = Self.loopback(port: port)
                _ = withUnsafePointer(to: &target) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(filler, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
                }
                var polled = pollfd(fd: filler, events: Int16(POLLOUT), revents: 0)
                if poll(&polled, 1, 300) == 0 { return }
            }
            throw TransportError("the listener's accept queue never filled")
        }

        deinit {
            for filler in fillers { close(filler) }
            close(listener)
        }

        static func loopback(port: UInt16) -> sockaddr_in {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = port.bigEndian
            return address
        }
    }

    static func address(_ ip: String, port: UInt16) -> ResolvedAddress {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr(ip)
        address.sin_port = port.bigEndian
        let bytes = withUnsafeBytes(of: &address) { Array($0) }
        return ResolvedAddress(family: AF_INET, socketProtocol: Int32(IPPROTO_TCP), address: bytes)
    }

    static func address6(_ text: String, port: UInt16) -> ResolvedAddress {
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        _ = inet_pton(AF_INET6, text, &address.sin6_addr)
        address.sin6_port = port.bigEndian
        let bytes = withUnsafeBytes(of: &address) { Array($0) }
        return ResolvedAddress(family: AF_INET6, socketProtocol: Int32(IPPROTO_TCP), address: bytes)
    }

    @Test("the black hole really swallows connects (the test's premise)")
    func blackHoleSwallowsConnects() throws {
        let hole = try BlackHole()
        let holePort = hole.port
        var transport = SocketHTTPTransport(timeout: 1)
        transport.resolver = HostResolver { _, _ in .success([Self.address("127.0.0.1", port: holePort)]) }
        #expect {
            _ = try transport.send(TransportRequest(method: "GET", url: "http://keys.example/x"))
        } throws: { error in
            (error as? TransportError)?.isTimeout == true
        }
        withExtendedLifetime(hole) {}
    }

    @Test("a resolver answering an unroutable address and a black hole first: the request reaches the third address")
    func unroutableFirst() throws {
        let hole = try BlackHole()
        let holePort = hole.port
        let server = try OneShotHTTPServer(response: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        var transport = SocketHTTPTransport(timeout: 5)
        transport.resolver = HostResolver { _, _ in
            // 192.0.2.1 is TEST-NET-1 (RFC 5737): never routed; depending on the machine's routes
            // its connect fails at once or hangs like the black hole.
            .success([
                Self.address("192.0.2.1", port: 443), Self.address("127.0.0.1", port: holePort),
                Self.address("127.0.0.1", port: server.port),
            ])
        }
        let response = try transport.send(TransportRequest(method: "GET", url: "http://keys.example/x"))
        withExtendedLifetime(hole) {}
        #expect(response.status == 200 && response.body == Array("ok".utf8))
        #expect(server.request().hasPrefix("GET /x HTTP/1.1\r\nHost: keys.example\r\n"))
    }

    @Test("addresses alternate between families, starting with the first's (RFC 8305, section 4)")
    func interleaving() {
        let v6a = Self.address6("2001:db8::1", port: 1)
        let v6b = Self.address6("2001:db8::2", port: 1)
        let v6c = Self.address6("2001:db8::3", port: 1)
        let v4a = Self.address("192.0.2.1", port: 1)
        let v4b = Self.address("192.0.2.2", port: 1)
        let order = TransportSocket.interleavedByFamily([v6a, v6b, v6c, v4a, v4b]).map(\.address)
        #expect(order == [v6a, v4a, v6b, v4b, v6c].map(\.address))
        #expect(TransportSocket.interleavedByFamily([v4a, v6a, v4b]).map(\.address) == [v4a, v6a, v4b].map(\.address))
        #expect(TransportSocket.interleavedByFamily([]).isEmpty)
    }

    @Test("every address refused: an error naming the host that is not a timeout")
    func allRefused() throws {
        // A port nothing listens on: bind one and close it.
        let probe = try OneShotHTTPServer(response: "")
        let port = probe.port
        var closer = SocketHTTPTransport(timeout: 5)
        closer.resolver = HostResolver { _, _ in .success([Self.address("127.0.0.1", port: port)]) }
        _ = try? closer.send(TransportRequest(method: "GET", url: "http://closing.example/x"))
        _ = probe.request()
        var transport = SocketHTTPTransport(timeout: 5)
        transport.resolver = HostResolver { _, _ in
            .success([Self.address("127.0.0.1", port: port), Self.address("127.0.0.1", port: port)])
        }
        #expect {
            _ = try transport.send(TransportRequest(method: "GET", url: "http://refused.example/x"))
        } throws: { error in
            let error = error as? TransportError
            return error?.isTimeout == false && error?.message.contains("cannot connect to refused.example") == true
        }
    }
}
