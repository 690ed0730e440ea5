import Foundation
import Primitives
import Testing

@testable import HTTPClient

/// Name lookups inside the request's deadline (`getaddrinfo` itself takes no timeout).
@Suite("Host lookups: bounded by the request's timeout")
struct HostResolverTests {
    @Test("a lookup that hangs ends the request as a timeout when its time is up, not when the lookup returns")
    func hangingLookupTimesOut() throws {
        var transport = SocketHTTPTransport(timeout: 0.5)
        transport.resolver = HostResolver { _, _ in
            Thread.sleep(forTimeInterval: 5)
            return .success([])
        }
        let started = ContinuousClock.now
        do {
            _ = try transport.send(TransportRequest(method: "GET", url: "http://slow-dns.example/keys"))
            Issue.record("the request succeeded")
        } catch let error as TransportError {
            #expect(error.isTimeout, "\(error)")
        }
        #expect(ContinuousClock.now - started < .seconds(3))
    }

    @Test("a numeric address resolves to itself; a failed lookup is an error that is not a timeout")
    func lookups() throws {
        let addresses = try HostResolver().resolve("127.0.0.1", port: 80, deadline: MonotonicClock.system.now() + .seconds(5), clock: .system)
        #expect(addresses.count >= 1 && addresses.allSatisfy { $0.family == AF_INET })
        let failing = HostResolver { host, _ in .failure(TransportError("cannot resolve \(host)")) }
        #expect {
            _ = try failing.resolve("nowhere", port: 80, deadline: MonotonicClock.system.now() + .seconds(5), clock: .system)
        } throws: { error in
            (error as? TransportError)?.isTimeout == false
        }
    }

    @Test("no thread to spare for the lookup: the request fails with an error, the process goes on")
    func noThreadForTheLookup() {
        let resolver = HostResolver(
            lookup: { _, _ in .success([]) },
            startThread: { _ throws(ThreadStartError) in throw ThreadStartError(code: EAGAIN) })
        #expect {
            _ = try resolver.resolve("keys.example", port: 443, deadline: MonotonicClock.system.now() + .seconds(5), clock: .system)
        } throws: { error in
            let error = error as? TransportError
            return error?.isTimeout == false && error?.message.contains("cannot resolve keys.example") == true
        }
    }
}
