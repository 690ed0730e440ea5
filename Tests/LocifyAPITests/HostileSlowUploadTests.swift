import Foundation
import JSON
import Testing
import TestSupport

@testable import LocifyAPI
import TestSupportServer

/// Issue 23 item 1: slow uploads cannot lock out writes. A request to a route that needs a token
/// is authenticated on its head, before its body is reserved or read; an admitted body is
/// charged to its user's share of the body budget; a body slower than 1 KiB/s after 10 s is cut
/// off with 408.
@Suite("Hostile input: slow uploads cannot lock out writes", .serialized)
struct HostileSlowUploadTests {
    private static let twoMebibytes = 2 * 1024 * 1024

    private static func uploadHead(_ path: String = "/v1/categories", token: String?, length: Int = twoMebibytes, extra: String = "")
        -> String
    {
        var head = "POST \(path) HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\(extra)"
        if let token { head += "Authorization: Bearer \(token)\r\n" }
        return head + "Content-Length: \(length)\r\n\r\n"
    }

    @Test("a head without a valid token is answered 401 before its body is sent; a valid one waits for its body")
    func authenticatedOnHead() throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let http = server.application.server

        let anonymous = try RawHTTPClient(port: server.port)
        try anonymous.send(Self.uploadHead(token: nil))
        let refused = try anonymous.readResponse(timeout: .seconds(10))
        #expect(refused.status == 401)
        #expect(refused.headers["WWW-Authenticate"] == "Bearer")
        #expect(refused.headers["Connection"] == "close")
        #expect(refused.headers["X-Request-Id"] != nil)
        #expect(http.bufferedBodyBytes == 0)

        // A forged token waiting for 100 Continue: 401, never 100.
        let forged = try server.minter.sign(
            header: server.minter.header(), claims: server.minter.claims(uid: "forger", issuedAt: Date().timeIntervalSince1970),
            signature: .rs256(TestKeys.attacker))
        let expecting = try RawHTTPClient(port: server.port)
        try expecting.send(Self.uploadHead(token: forged, extra: "Expect: 100-continue\r\n"))
        #expect(try expecting.readResponse(timeout: .seconds(10)).status == 401)

        // No such route: 404 on the head, with or without a token.
        let unknown = try RawHTTPClient(port: server.port)
        try unknown.send(Self.uploadHead("/v1/nowhere", token: nil))
        #expect(try unknown.readResponse(timeout: .seconds(10)).status == 404)

        // A valid token: the body is admitted (nothing held before it arrives) and the request
        // answered once the body arrives.
        let body = Array(JSONWriter.encode(categoryBody(id: newID(), name: "Uploaded")))
        let admitted = try RawHTTPClient(port: server.port)
        try admitted.send(Self.uploadHead(token: server.token(for: "uploader"), length: body.count, extra: "Expect: 100-continue\r\n"))
        #expect(try admitted.readResponse(timeout: .seconds(10)).status == 100)
        #expect(http.bufferedBodyBytes == 0)
        try admitted.send(body)
        #expect(try admitted.readResponse(timeout: .seconds(10)).status == 201)
        #expect(eventually(timeout: .seconds(10)) { http.bufferedBodyBytes == 0 })
    }

    /// Issue 35 item 1: a route that reads no body does not let one hold the body budget.
    @Test("a body sent to a route that takes none is answered 413 E010, on its head and unread when it trickles; 401 still comes first")
    func bodyOnBodilessRoute() throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let http = server.application.server
        let trickling = try RawHTTPClient(port: server.port)
        try trickling.send("GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: \(Self.twoMebibytes)\r\n\r\n")
        let refused = try trickling.readResponse(timeout: .seconds(10))
        #expect(refused.status == 413)
        #expect(refused.headers["Connection"] == "close")
        #expect(try JSONParser.parse(refused.body).objectValue?["error"]?.objectValue?["code"]?.stringValue == "E010")
        #expect(http.bufferedBodyBytes == 0)
        // Whole with its head: the same answer, however the bytes arrive.
        let whole = try RawHTTPClient(port: server.port)
        try whole.send("GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
        #expect(try whole.readResponse(timeout: .seconds(10)).status == 413)
        // On a /v1 route a missing token is answered first; with one, the body is refused unread.
        let anonymous = try RawHTTPClient(port: server.port)
        try anonymous.send(Self.uploadHead("/v1/users/me", token: nil).replacingOccurrences(of: "POST", with: "GET"))
        #expect(try anonymous.readResponse(timeout: .seconds(10)).status == 401)
        let token = try server.token(for: "bodiless-user")
        #expect(try server.request("GET", "/v1/users/me", token: token).status == 200)
        let signedIn = try RawHTTPClient(port: server.port)
        try signedIn.send(Self.uploadHead("/v1/users/me", token: token).replacingOccurrences(of: "POST", with: "GET"))
        #expect(try signedIn.readResponse(timeout: .seconds(10)).status == 413)
        #expect(http.bufferedBodyBytes == 0)
    }

    /// What the slow-upload flood measured.
    private struct FloodOutcome: Sendable {
        var uploadsStarted = 0
        var uploads: [Int: Int] = [:]
        var unanswered = 0
        var creates: [Int: Int] = [:]
        var slowest = Duration.zero
        var peakBudget = 0
    }

    /// The scenario, end to end: 1,000 slow uploaders (a byte every 2 s of an announced
    /// 2 MiB body, starting again 1 s after each answer) spread over 127.0.0.2-127.0.0.101, half
    /// without a token and half with the valid tokens of 10 accounts, for 25 s; meanwhile
    /// another user creates a category from 127.0.0.1 every 250 ms. Before, the uploads reserved
    /// the whole 256 MiB budget before authentication and every write was answered 503. The
    /// flood runs on a thread of its own (`onOwnThread`), not on a cooperative thread.
    @Test("1,000 slow uploaders over 100 addresses: another user's create is answered 201 within 1 s throughout")
    func slowUploadFlood() async throws {
        let sanitized = SanitizerDetection.isActive
        let count = sanitized ? 200 : 1000
        let openFiles = raiseOpenFileLimit(to: 2 * count + 1000)
        try #require(openFiles >= 2 * count + 1000, "ulimit -n must allow \(2 * count + 1000) files, is \(openFiles)")
        let outcome = try await onOwnThread { try Self.runSlowUploadFlood(count: count, seconds: sanitized ? 15 : 25) }
        print(
            "slow-upload flood: \(outcome.uploadsStarted) uploads started, answers \(outcome.uploads), \(outcome.unanswered) "
                + "unanswered; bystander creates \(outcome.creates), slowest \(outcome.slowest); body budget peak "
                + "\(outcome.peakBudget / 1_048_576) MiB")
        let creates = outcome.creates.values.reduce(0, +)
        #expect(creates >= 20)
        #expect(outcome.creates == [201: creates])
        // Before, every create was answered 503 S003. The 1 s is a figure measured by
        // hand (0.3-0.6 s alone, RELIABILITY.md), not asserted: a shared CI machine under load
        // would make it flaky. The bound only catches a create left to wait out the flood.
        #expect(outcome.slowest < .seconds(10))
        // Anonymous uploads are refused on their head; the admitted ones hold only the bytes they
        // sent (issue 35 item 1), which put the budget under no pressure.
        #expect((outcome.uploads[401] ?? 0) >= count / 2)
        #expect(outcome.uploads[503] == nil)
        #expect(outcome.peakBudget <= 10 * 16 * 1_048_576 + 64 * 1024)
    }

    private static func runSlowUploadFlood(count: Int, seconds: Int) throws -> FloodOutcome {
        let server = try TestServer.start()
        defer { server.stop() }
        let tokens = try (0..<10).map { try server.token(for: "slow-uploader-\($0)") }
        let flood = SlowUploadFlood(
            port: server.port, count: count, source: { "127.0.0.\(2 + $0 % 100)" },
            head: { index in uploadHead(token: index % 2 == 0 ? nil : tokens[(index / 2) % tokens.count]) })
        let writer = try server.token(for: "slow-upload-bystander")
        let clock = ContinuousClock()
        let end = clock.now + .seconds(seconds)
        var outcome = FloodOutcome()
        while clock.now < end {
            let started = clock.now
            let response = try server.request("POST", "/v1/categories", token: writer, json: categoryBody(id: newID()))
            outcome.slowest = max(outcome.slowest, clock.now - started)
            outcome.creates[response.status, default: 0] += 1
            outcome.peakBudget = max(outcome.peakBudget, server.application.server.bufferedBodyBytes)
            Thread.sleep(forTimeInterval: 0.25)
        }
        flood.stop()
        outcome.uploadsStarted = flood.started
        outcome.uploads = flood.statuses
        outcome.unanswered = flood.unanswered
        return outcome
    }

    /// Issue 35 item 1, scaled to a 2 MiB budget (the 256 MiB filled in proportion): 16
    /// addresses (127.0.0.2-17) x 8 connections announce 2 MiB bodies to `GET /health` and
    /// trickle them at 1.25 KiB/s, and 128 connections from 127.0.0.18 do the same on
    /// `POST /v1/sync/push` with the tokens of 16 accounts, starting again 1 s after each answer;
    /// after 15 s (the pushes' trickles alone fill the budget in about 13 s) a user pushes 30
    /// times from 127.0.0.1. Before, the first trickle reserved the whole budget and every push
    /// was answered 503 S003.
    @Test("16 addresses trickling bodies to GET /health and 16 accounts trickling pushes: another user's 30 pushes are all answered 200")
    func bodyBudgetLockout() async throws {
        let outcome = try await onOwnThread { try Self.runBudgetLockout() }
        print(
            "body-budget lockout: pushes \(outcome.creates), slowest \(outcome.slowest); /health uploads \(outcome.uploads), "
                + "push uploads \(outcome.uploadsStarted) started; body budget peak \(outcome.peakBudget) bytes")
        #expect(outcome.creates == [200: 30])
        // Bodies to a route that takes none are refused on their head, holding nothing.
        #expect(Set(outcome.uploads.keys) == [413])
        // Room beyond the budget goes only to holders within their part (at most the budget).
        #expect(outcome.peakBudget <= 2 * 2_097_152)
    }

    private static func runBudgetLockout() throws -> FloodOutcome {
        let server = try TestServer.start(configure: { $0.maxBufferedBodyBytes = 2_097_152 })
        defer { server.stop() }
        let tokens = try (0..<16).map { try server.token(for: "trickling-account-\($0)") }
        let bodiless = SlowUploadFlood(
            port: server.port, count: 128, source: { "127.0.0.\(2 + $0 % 16)" },
            head: { _ in "GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: \(twoMebibytes)\r\n\r\n" },
            trickleBytes: 128, trickleInterval: .milliseconds(100))
        let pushes = SlowUploadFlood(
            port: server.port, count: 128, source: { _ in "127.0.0.18" },
            head: { uploadHead("/v1/sync/push", token: tokens[$0 % 16]) }, trickleBytes: 128, trickleInterval: .milliseconds(100))
        let victim = try server.token(for: "pushing-bystander")
        var outcome = FloodOutcome()
        let clock = ContinuousClock()
        let warmUp = clock.now + .seconds(15)
        while clock.now < warmUp {
            outcome.peakBudget = max(outcome.peakBudget, server.application.server.bufferedBodyBytes)
            Thread.sleep(forTimeInterval: 0.1)
        }
        for _ in 0..<30 {
            let started = clock.now
            let push: JSONValue = ["changes": [SyncChange.change("category", "create", SyncChange.category(UUID(), name: "Pushed"))]]
            let response = try server.request("POST", "/v1/sync/push", token: victim, json: push)
            outcome.slowest = max(outcome.slowest, clock.now - started)
            outcome.creates[response.status, default: 0] += 1
            outcome.peakBudget = max(outcome.peakBudget, server.application.server.bufferedBodyBytes)
            Thread.sleep(forTimeInterval: 0.2)
        }
        bodiless.stop()
        pushes.stop()
        outcome.uploads = bodiless.statuses
        outcome.uploadsStarted = pushes.started
        return outcome
    }
}
