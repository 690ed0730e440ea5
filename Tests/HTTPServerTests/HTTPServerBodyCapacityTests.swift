import Logging
import Testing
import TestSupport

@testable import HTTPServer

/// Issue 35 item 1, followed up: the body budget bounds the memory bodies hold. A body is parsed
/// into a buffer that grows ahead of what arrived (doubling, so that a trickle is not copied over
/// and over); the budget is charged by that buffer's capacity, asked for before the buffer grows,
/// rather than by the bytes that arrived (RSS was then about twice the budget). One connection is
/// driven by hand through `Connection.consume`, as the event loop drives it.
@Suite("HTTPServer: the body budget is charged by what a body's buffer holds")
struct HTTPServerBodyCapacityTests {
    /// glibc rounds an allocation below its mmap threshold up to 16 bytes: the budget is charged
    /// the capacity the buffer was grown to, not that rounding.
    private static let allocatorRounding = 16

    private final class Harness {
        let context: ServerContext
        let connection: Connection

        init(budget: Int) {
            var configuration = HTTPServerConfiguration()
            configuration.maxBufferedBodyBytes = budget
            configuration.maxBufferedBodyBytesPerClient = budget
            configuration.maxBodyBytes = budget
            context = ServerContext(
                configuration: configuration, responder: HTTPClosureResponder.echo, logger: Logger(label: "test"),
                counters: ServerCounters(), acceptorWakeFD: -1)
            connection = Connection(
                fd: -1, info: ConnectionInfo(id: 1, remoteAddress: "127.0.0.1:40000"), limits: context.limits)
        }

        /// Feeds `bytes` as one read of the socket.
        func read(_ bytes: [UInt8]) {
            bytes.withUnsafeBytes { input in
                let used = connection.consume(input, now: context.now(), context: context)
                connection.keepUnparsed(input, from: used, now: context.now())
            }
        }

        var charged: Int { context.counters.bufferedBodyBytes.load(ordering: .relaxed) }
    }

    @Test("what a body's buffer has allocated is charged to the budget, from its head to its last byte")
    func chargedByCapacity() throws {
        let harness = Harness(budget: 1_048_576)
        harness.read(Array("POST /upload HTTP/1.1\r\nHost: h\r\nContent-Length: 100000\r\n\r\n".utf8))
        // Nothing arrived: nothing allocated, nothing charged.
        #expect(harness.connection.parser.bodyCapacity == 0)
        #expect(harness.charged == 0)
        // A slow phone's pieces: the buffer grows ahead of them, charged before it grows.
        var arrived = 0
        while arrived < 98_000 {
            harness.read([UInt8](repeating: 0x61, count: 7_000))
            arrived += 7_000
            let allocated = harness.connection.parser.bodyCapacity
            #expect(allocated >= arrived)
            #expect(allocated <= harness.charged + Self.allocatorRounding, "\(arrived) bytes arrived")
            // Growing with what arrived: never more than twice it.
            #expect(harness.charged <= 2 * arrived)
        }
        harness.read([UInt8](repeating: 0x61, count: 2_000))
        // The announced length is the last step: the buffer of a complete body is exact.
        let request = try #require(harness.connection.readyRequest?.request)
        #expect(request.body.count == 100_000)
        #expect(request.body.capacity <= 100_000 + Self.allocatorRounding)
        #expect(harness.charged == 100_000)
        harness.connection.releaseBodyBudget(context: harness.context)
        #expect(harness.charged == 0)
    }

    @Test("a body cut off frees its buffer as it gives back its charge")
    func cutBodyFreesItsBuffer() {
        let harness = Harness(budget: 1_048_576)
        harness.read(Array("POST /upload HTTP/1.1\r\nHost: h\r\nContent-Length: 100000\r\n\r\n".utf8))
        harness.read([UInt8](repeating: 0x61, count: 50_000))
        #expect(harness.charged == 50_000)
        // Cut off (too slow, or shed when the budget is full): answered, then closed.
        harness.connection.queueError(
            HTTPRequestError(status: .requestTimeout, reason: "body slower than the minimum rate"), context: harness.context)
        #expect(harness.charged == 0)
        #expect(harness.connection.parser.bodyCapacity == 0)
    }
}
