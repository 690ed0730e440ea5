import Dispatch
import HTTPServer
import Testing
import TestSupport

/// Issue 13 item 3, as issue 35 item 1 left it: a server-wide budget for request bodies held in
/// memory (what has arrived of them), `100 Continue` only for a body that can start, and a
/// bounded worker queue; over either, 503 with `Retry-After`.
@Suite("HTTPServer: body budget and worker queue bound")
struct HTTPServerBodyBudgetTests {
    private static let mebibyte = 1024 * 1024

    /// The header section of a POST announcing `length` body bytes.
    private func postHead(_ length: Int, extra: String = "") -> String {
        "POST /upload HTTP/1.1\r\nHost: h\r\n\(extra)Content-Length: \(length)\r\n\r\n"
    }

    /// Waits until the server's held body bytes equal `bytes`.
    private func waitForBudget(_ server: HTTPTestServer, _ bytes: Int) -> Bool {
        eventually(timeout: .seconds(20)) { server.server.bufferedBodyBytes == bytes }
    }

    /// Two clients of 127.0.0.1 each holding `each` bytes: a body of that length arrived but for
    /// its last byte (its buffer has grown to the announced length).
    private func holders(_ server: HTTPTestServer, each: Int) throws -> [RawHTTPClient] {
        try (0..<2).map { _ in
            let client = try server.client()
            try client.send(postHead(each))
            try client.send([UInt8](repeating: 0x61, count: each - 1))
            return client
        }
    }

    @Test("a body its holder has no room for is refused 503 with Retry-After; bodiless requests are served meanwhile")
    func overBudget() throws {
        try withHTTPTestServer(configure: { $0.maxBufferedBodyBytes = 4 * Self.mebibyte }) { server in
            // 127.0.0.1 holds the whole budget but 2 bytes with two bodies short of their last byte.
            let held = try holders(server, each: 2 * Self.mebibyte - 1)
            #expect(waitForBudget(server, 4 * Self.mebibyte - 2))

            let refused = try server.roundTrip(postHead(10) + "0123456789")
            #expect(refused.status == 503)
            #expect(refused.headers["Retry-After"] == "1")
            #expect(refused.headers["Connection"] == "close")
            #expect(refused.text == "503 Service Unavailable\n")

            let bodiless = try server.roundTrip("GET /health HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(bodiless.status == 200)

            // An admitted body completes, and what it held is back once it is answered.
            try held[0].send("a")
            let answered = try held[0].readResponse(timeout: .seconds(20))
            #expect(answered.status == 200)
            #expect(answered.text == "POST /upload 2097151")
            #expect(waitForBudget(server, 2 * Self.mebibyte - 1))
            let accepted = try server.roundTrip(postHead(10) + "0123456789")
            #expect(accepted.status == 200)
            #expect(accepted.text == "POST /upload 10")

            // A client that goes away mid-body gives back what it held.
            held[1].close()
            #expect(waitForBudget(server, 0))
        }
    }

    @Test("100 Continue is sent only when the body can start; otherwise 503 instead")
    func continueOnlyWhenItFits() throws {
        try withHTTPTestServer(configure: { $0.maxBufferedBodyBytes = 2 * Self.mebibyte }) { server in
            let held = try holders(server, each: Self.mebibyte)
            #expect(waitForBudget(server, 2 * Self.mebibyte))

            let waiting = try server.client()
            try waiting.send(postHead(5, extra: "Expect: 100-continue\r\n"))
            let refused = try waiting.readResponse(timeout: .seconds(10))
            #expect(refused.status == 503)
            #expect(refused.headers["Retry-After"] == "1")

            for client in held { client.close() }
            #expect(waitForBudget(server, 0))
            let fits = try server.client()
            try fits.send(postHead(5, extra: "Expect: 100-continue\r\n"))
            #expect(try fits.readResponse(timeout: .seconds(10)).status == 100)
            try fits.send("hello")
            let response = try fits.readResponse(timeout: .seconds(10))
            #expect(response.status == 200)
            #expect(response.text == "POST /upload 5")
        }
    }

    @Test("a chunked body holds what has arrived of it, framing included, until it is answered")
    func chunkedHoldsWhatArrived() throws {
        try withHTTPTestServer(configure: { $0.maxBufferedBodyBytes = 4 * Self.mebibyte }) { server in
            let client = try server.client()
            try client.send("POST /upload HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n")
            #expect(client.staysQuiet(for: .milliseconds(200)))
            #expect(server.server.bufferedBodyBytes == 0)
            try client.send("5\r\nhello\r\n")
            #expect(waitForBudget(server, 10))
            try client.send("0\r\n\r\n")
            let response = try client.readResponse(timeout: .seconds(10))
            #expect(response.status == 200)
            #expect(response.text == "POST /upload 5")
            #expect(waitForBudget(server, 0))
        }
    }

    @Test("a body refused at a timeout or over the size limit gives its share back")
    func errorsRelease() throws {
        try withHTTPTestServer(configure: {
            $0.maxBufferedBodyBytes = 4 * Self.mebibyte
            $0.bodyReadTimeout = .milliseconds(300)
        }) { server in
            let stalled = try server.client()
            try stalled.send(postHead(Self.mebibyte) + "abc")
            #expect(try stalled.readResponse(timeout: .seconds(20)).status == 408)
            let chunked = try server.client()
            try chunked.send("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n")
            try chunked.send("300000\r\n")
            #expect(try chunked.readResponse(timeout: .seconds(20)).status == 413)
            #expect(waitForBudget(server, 0))
        }
    }

    @Test("when maxQueuedRequests requests wait for a worker, the next one is answered 503 with Retry-After at once")
    func boundedWorkerQueue() throws {
        let gate = DispatchSemaphore(value: 0)
        let running = Locked(0)
        let responder = HTTPClosureResponder { request, _ in
            if request.path == "/block" {
                running.withLock { $0 += 1 }
                gate.wait()
            }
            return HTTPResponse(status: .ok, body: Array(request.path.utf8))
        }
        try withHTTPTestServer(responder: responder, configure: {
            $0.workerThreads = 1
            $0.maxQueuedRequests = 1
        }) { server in
            defer { for _ in 0..<4 { gate.signal() } }
            let busy = try server.client()
            try busy.send("GET /block HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(eventually(timeout: .seconds(20)) { running.value == 1 })
            let queued = try server.client()
            try queued.send("GET /block HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(eventually(timeout: .seconds(20)) { server.server.workerQueueDepth == 1 })

            let refused = try server.roundTrip("GET /other HTTP/1.1\r\nHost: h\r\n\r\n", timeout: .seconds(5))
            #expect(refused.status == 503)
            #expect(refused.headers["Retry-After"] == "1")
            #expect(refused.headers["Connection"] == "close")

            gate.signal()
            gate.signal()
            #expect(try busy.readResponse().status == 200)
            #expect(try queued.readResponse().status == 200)
            let after = try server.roundTrip("GET /other HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(after.status == 200)
        }
    }

    @Test("the budget, queue bound and Retry-After must make sense: the server refuses to start otherwise")
    func invalidConfiguration() throws {
        #expect(throws: HTTPServerError.self) {
            try withHTTPTestServer(configure: { $0.maxBufferedBodyBytes = $0.maxBodyBytes - 1 }) { _ in }
        }
        #expect(throws: HTTPServerError.self) {
            try withHTTPTestServer(configure: { $0.maxQueuedRequests = 0 }) { _ in }
        }
        #expect(throws: HTTPServerError.self) {
            try withHTTPTestServer(configure: { $0.overloadRetryAfterSeconds = -1 }) { _ in }
        }
    }
}
