import Foundation
import LocifyClient
import Testing
import TestSupport
import TestSupportServer

/// What the client soak found about the server's rules: a known issue while it stands (one that
/// stops happening is reported by Swift Testing), a plain test once fixed.
@Suite("Server behaviour the client soak found")
struct ServerFindingsTests {
    @Test("a newer delete of a tombstone moves its time, so a write made between the two deletes loses")
    func absorbedDelete() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let api = ClientHarness(server).api()
        let id = UUID()
        let t0 = Date(timeIntervalSinceNow: -600)
        _ = try await api.createCategory(CategoryWrite(id: id, name: "C", updatedAt: t0))
        try await api.deleteCategory(id: id, updatedAt: t0 + 10)  // tombstone at t0 + 10
        try await api.deleteCategory(id: id, updatedAt: t0 + 40)  // 204, the tombstone moves to t0 + 40
        // By last write wins the record was last deleted at t0 + 40, so a write made at t0 + 20 is
        // older and is refused (E008), as it would have been had it arrived before the second delete.
        do {
            _ = try await api.replaceCategory(CategoryWrite(id: id, name: "Back", updatedAt: t0 + 20))
            Issue.record("a write older than the last delete brought the category back")
        } catch LocifyError.conflict(let error, _) {
            #expect(error.code == "E008")
        }
    }
}
