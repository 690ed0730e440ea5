import Foundation
import LocifyClient
import Synchronization
import Testing
import TestSupport
import TestSupportServer

/// LocifyAPIClient against the real server and PostgreSQL: every `/v1` endpoint, typed errors,
/// token refresh, cancellation.
@Suite("LocifyClient API: every /v1 endpoint against the real server")
struct APIClientTests {
    @Test("every endpoint answers with typed records; an older write is E008 carrying the server's record")
    func everyEndpoint() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let api = ClientHarness(server).api()

        let info = try await api.info()
        #expect(info.maxPushChanges == 50 && info.maxPageSize == 100 && info.maxPullLimit == 1000)
        let me = try await api.me()
        #expect(try await api.updateMe(name: "Renamed").name == "Renamed")
        #expect(me.email == "user@example.com")

        let defaults = try await api.listCategories()
        #expect(defaults.meta.totalCount == 4 && defaults.data.allSatisfy(\.isDefault))

        let t0 = Date(timeIntervalSinceNow: -600)
        let categoryID = UUID(), otherID = UUID(), locationID = UUID()
        let created = try await api.createCategory(CategoryWrite(id: categoryID, name: " Bakeries ", updatedAt: t0))
        #expect(created.name == "Bakeries" && created.version == 1 && created.updatedAt == t0.truncatedForTest)
        _ = try await api.createCategory(CategoryWrite(id: otherID, name: "Other", updatedAt: t0))
        let replaced = try await api.replaceCategory(
            CategoryWrite(id: categoryID, name: "Bread", icon: "https://example.com/b.png", updatedAt: t0 + 10))
        #expect(replaced.version == 2 && replaced.icon == "https://example.com/b.png")
        #expect(try await api.category(id: categoryID) == replaced)
        let byBody = try await api.replaceCategory(CategoryWrite(id: otherID, name: "Other!", updatedAt: t0 + 5), idIn: .body)
        #expect(byBody.name == "Other!" && byBody.version == 2)

        let write = LocationWrite(
            id: locationID, categoryID: categoryID, name: "Du Pain", address: "34 Rue Yves Toudic", latitude: 48.8718,
            longitude: 2.3631, imageURLs: ["https://example.com/1.jpg"], updatedAt: t0 + 20)
        let location = try await api.createLocation(write)
        #expect(location.latitude == 48.8718 && location.imageURLs == ["https://example.com/1.jpg"])
        var edit = write
        edit.isFavorite = true
        edit.updatedAt = t0 + 30
        var favourite = try await api.replaceLocation(edit)
        #expect(favourite.isFavorite && favourite.version == 2)
        #expect(try await api.location(id: locationID) == favourite)
        var renamed = edit
        renamed.name = "Du Pain et des Idées"
        renamed.updatedAt = t0 + 35
        favourite = try await api.replaceLocation(renamed, idIn: .body)
        #expect(favourite.version == 3 && favourite.name == renamed.name)
        let found = try await api.listLocations(.init(categoryID: categoryID, search: "pain", sort: .name))
        #expect(found.data == [favourite] && found.meta.totalCount == 1)

        var stale = write
        stale.name = "Old name"
        stale.updatedAt = t0 + 25
        do {
            _ = try await api.replaceLocation(stale)
            Issue.record("an older write must be refused")
        } catch LocifyError.conflict(let error, let record) {
            #expect(error.status == 409 && error.code == "E008" && error.requestID != nil)
            #expect(record == .location(favourite))
        }
        do {
            _ = try await api.category(id: UUID())
            Issue.record("an unknown id must be E007")
        } catch LocifyError.notFound(let error) {
            #expect(error.status == 404 && error.code == "E007")
        }
        do {
            _ = try await api.createLocation(LocationWrite(id: UUID(), categoryID: categoryID, name: "X", latitude: 91, longitude: 0))
            Issue.record("a latitude of 91 must be E003")
        } catch LocifyError.invalidCoordinates(let error) {
            #expect(error.status == 400 && error.code == "E003" && error.details.first?.field == "latitude")
        }

        let pushed = try await api.push([
            .createLocation(LocationWrite(id: UUID(), categoryID: otherID, name: "Pushed", latitude: 1, longitude: 2, updatedAt: t0 + 40)),
            .deleteLocation(DeleteWrite(id: UUID(), updatedAt: t0 + 40)),
        ])
        #expect(pushed.map(\.status) == [.applied, .error])
        #expect(pushed[1].error?.code == "E007")

        let snapshot = try await api.pull(since: nil)
        #expect(snapshot.changes.count == 6 + 2 && !snapshot.hasMore)
        try await api.deleteCategory(id: categoryID, updatedAt: t0 + 50, reassignTo: otherID)
        try await api.deleteLocation(id: locationID, updatedAt: t0 + 60)
        let delta = try await api.pull(since: snapshot.cursor)
        #expect(delta.changes.contains(.delete(.category, Tombstone(id: categoryID, deletedAt: (t0 + 50).truncatedForTest))))
        #expect(delta.changes.contains(.delete(.location, Tombstone(id: locationID, deletedAt: (t0 + 60).truncatedForTest))))
        #expect(try await api.allLocations().map(\.categoryID) == [otherID])

        try await api.deleteAccount()
        do {
            _ = try await api.me()
            Issue.record("a deleted account's token must be refused")
        } catch LocifyError.unauthorized(let error) {
            #expect(error.status == 401 && error.code == "E005")
        }
    }

    @Test("a refused token is refreshed once: the request is retried with a forced refresh, and a second refusal is E005")
    func tokenRefresh() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let calls = Mutex<[Bool]>([])
        let refreshing = LocifyAPIClient(baseURL: harness.baseURL) { forceRefresh in
            calls.withLock { $0.append(forceRefresh) }
            return forceRefresh ? try server.token(for: harness.uid) : "expired.token.value"
        }
        #expect(try await refreshing.me().id == harness.uid)
        #expect(calls.withLock { $0 } == [false, true])

        calls.withLock { $0 = [] }
        let broken = LocifyAPIClient(baseURL: harness.baseURL) { forceRefresh in
            calls.withLock { $0.append(forceRefresh) }
            return "never.a.token"
        }
        do {
            _ = try await broken.me()
            Issue.record("a token refused twice must fail")
        } catch LocifyError.unauthorized(let error) {
            #expect(error.status == 401 && error.code == "E005")
        }
        #expect(calls.withLock { $0 } == [false, true])

        struct SignedOut: Error {}
        let signedOut = LocifyAPIClient(baseURL: harness.baseURL) { _ in throw SignedOut() }
        do {
            _ = try await signedOut.me()
            Issue.record("a token closure that throws must fail the call")
        } catch LocifyError.tokenUnavailable(let reason) {
            #expect(reason.contains("SignedOut"))
        }
    }

    /// No bound on the time: on a loaded machine a cancelled task may wait long for a thread. A
    /// cancel that did not reach the request would end in the 20 s request timeout, reported as
    /// `LocifyError.network`, not `cancelled`.
    @Test("cancelling the calling task aborts a request the network never answers (not the request timeout)")
    func cancellation() async throws {
        try await withUnansweredAPI { api in
            let task = Task { try await api.me() }
            try await Task.sleep(for: .milliseconds(200))
            task.cancel()
            let result = await task.result
            #expect(throws: LocifyError.cancelled) { try result.get() }
        }
    }

    /// A call whose task is cancelled before its request starts never starts the request (a data
    /// task cancelled before its `resume()` is not started at all).
    @Test("a call cancelled before its request starts ends cancelled (not the request timeout)")
    func cancelledBeforeStart() async throws {
        try await withUnansweredAPI { api in
            let task = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return try await api.me()
            }
            let result = await task.result
            #expect(throws: LocifyError.cancelled) { try result.get() }
        }
    }

    /// Runs `body` with a client of a real server whose requests the network never answers.
    private func withUnansweredAPI(_ body: (LocifyAPIClient) async throws -> Void) async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let device = "hang\(UInt32.random(in: 0...UInt32.max))"
        FaultPlans.hang(device: device)
        defer { FaultPlans.remove(device: device) }
        try await body(ClientHarness(server).faultyAPI(device: device))
    }
}

extension Date {
    /// As the server stores it.
    var truncatedForTest: Date { Date(locifyMilliseconds: locifyMilliseconds) }
}
