import Foundation
import LocifyClient
import Logging
import Testing
import TestSupport
import TestSupportServer

/// Diagnostics (issue 26 item 5): the logging hook, the `X-Request-Id` of every request kept with
/// its failure, the `URLError` code of a network failure.
@Suite("LocifyClient diagnostics: logging hook, X-Request-Id, URLError codes")
struct DiagnosticsTests {
    @Test("every request carries a fresh X-Request-Id, logged, that the server keeps and the error carries")
    func requestIDs() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let capture = LogCapture()
        var api = ClientHarness(server).api()
        api.logger = capture.logger()
        _ = try await api.info()
        var refused: LocifyError?
        do {
            _ = try await api.location(id: UUID())
        } catch let error as LocifyError {
            refused = error
        }
        let requests = capture.all.filter { $0.level == .debug }
        #expect(requests.count == 2, "\(capture.all.map(\.message))")
        let ids = requests.compactMap { $0.metadata["request_id"] }
        #expect(Set(ids).count == 2, "one id per request")
        #expect(ids.allSatisfy { UUID(uuidString: $0) != nil })
        // The server answered with the id the client sent (it keeps a sane client id as its own).
        #expect(refused?.code == "E007")
        #expect(refused?.requestID == ids.last)
        #expect(capture.all.contains { $0.level == .notice && $0.metadata["request_id"] == ids.last })
    }

    @Test("a network failure keeps its URLError code and request id, and is logged as a warning")
    func networkFailure() async throws {
        let capture = LogCapture()
        var api = unreachableAPI()
        api.logger = capture.logger()
        do {
            _ = try await api.info()
            Issue.record("a closed port answered")
        } catch LocifyError.network(let failure) {
            #expect(failure.code != nil, "\(failure)")
            #expect(failure.requestID != nil)
            let warning = capture.all.first { $0.level == .warning }
            #expect(warning?.metadata["request_id"] == failure.requestID)
            #expect(warning?.metadata["url_error_code"] == failure.code.map { "\($0.rawValue)" })
        }
    }

    @Test("the engine logs through its API client's logger, a refused change with its request's id")
    func engineLog() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let capture = LogCapture()
        var api = harness.api()
        api.logger = capture.logger()
        let a = SyncEngine(api: api, store: InMemoryStore())
        let b = SyncEngine(api: harness.api(), store: InMemoryStore())
        try await refusePlaces(of: a, deletingOn: b, ["Orphan"])
        #expect(capture.all.contains { $0.level == .info && $0.message.hasPrefix("sync finished") })
        let refusal = try #require(try await a.refusedChanges().first)
        let pushID = try #require(refusal.error.requestID)
        #expect(capture.all.contains { $0.level == .warning && $0.message.contains("refused") && $0.metadata["request_id"] == pushID })
        #expect(capture.all.contains { $0.level == .debug && $0.message.hasPrefix("POST /v1/sync/push") && $0.metadata["request_id"] == pushID })
    }
}
