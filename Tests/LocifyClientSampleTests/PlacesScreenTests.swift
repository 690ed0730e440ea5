import Foundation
import LocifyClient
import LocifyClientSample
import Synchronization
import Testing
import TestSupport
import TestSupportServer

/// The lines a screen printed.
final class Transcript: Sendable {
    private let lines = Mutex<[String]>([])

    func append(_ line: String) { lines.withLock { $0.append(line) } }

    /// The lines printed since `mark` (a count of lines).
    func since(_ mark: Int) -> [String] { lines.withLock { Array($0.dropFirst(mark)) } }

    var count: Int { lines.withLock { $0.count } }
}

/// The sample (issue 26 item 7): `locify-sample`'s screen against a real server and PostgreSQL,
/// as an app screen uses the engine (list, search, edit offline, status, sync on reconnect).
@Suite("locify-sample: the places screen against the server (issue 26 item 7)")
struct PlacesScreenTests {
    @Test("edits made offline are listed, searched and counted at once, and synced by start() when the network comes back")
    func offlineEditsSyncOnReconnect() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let uid = "sample-\(UUID().uuidString.prefix(6))"
        let token = try server.token(for: uid)
        // safe because: the literal is a valid URL
        let url = URL(string: "http://127.0.0.1:\(server.port)")!
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("locify-sample-test-\(UUID()).sqlite")
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: store.path + suffix) } }

        let api = LocifyAPIClient(baseURL: url) { _ in token }
        let engine = SyncEngine(api: api, store: try SQLiteStore(path: store.path))
        let transcript = Transcript()
        let connectivity = ManualConnectivity()
        let screen = PlacesScreen(engine: engine, connectivity: connectivity) { transcript.append($0) }
        var schedule = SyncSchedule()
        schedule.debounce = .milliseconds(100)
        await screen.appear(schedule)

        /// Runs the commands and returns what they printed, the live count's lines left out.
        func run(_ commands: String...) async -> [String] {
            let mark = transcript.count
            for command in commands { #expect(await screen.run(command)) }
            return transcript.since(mark).filter { !$0.hasPrefix("[live]") }
        }

        #expect(await run("new-category Bakeries", "add Bakeries / Du Pain et des Idées / 34 Rue Yves Toudic") == [
            "added category Bakeries", "added Du Pain et des Idées",
        ])
        #expect(await run("wait") == ["synced"], "start() pushed the edits after the debounce")
        #expect(try await api.allLocations().map(\.name) == ["Du Pain et des Idées"])

        #expect(await run("offline", "add Bakeries / Poilâne / 8 Rue du Cherche-Midi", "favorite Poilâne") == [
            "offline: edits wait in the outbox", "added Poilâne", "Poilâne is a favourite",
        ])
        // Another device adds a place meanwhile.
        let other = SyncEngine(api: LocifyAPIClient(baseURL: url) { _ in token }, store: InMemoryStore())
        try await other.sync()
        let bakeries = try #require(try await other.categories().first { $0.name == "Bakeries" })
        try await other.saveLocation(LocationDraft(categoryID: bakeries.id, name: "Boulangerie Utopie", latitude: 48.86, longitude: 2.37))
        try await other.sync()

        let offlineAnswers = await run("search POIL", "favorites", "categories")
        #expect(offlineAnswers == [
            "★ Poilâne, 8 Rue du Cherche-Midi [Bakeries]", "★ Poilâne, 8 Rue du Cherche-Midi [Bakeries]", "Bakeries (2)",
            "Cafe (0)", "Favorites (0)", "Restaurant (0)", "Tourist Attraction (0)",  // a new account's defaults
        ], "the local copy answers offline")
        let offlineStatus = await run("status")
        #expect(offlineStatus.count == 1 && offlineStatus[0].hasPrefix("status: offline, 1 pending, last sync ok"), "\(offlineStatus)")
        #expect(try await api.allLocations().count == 2, "nothing was sent while offline")

        #expect(await run("online", "wait") == ["online: syncing", "synced"])
        #expect(await run("list") == [
            "· Boulangerie Utopie [Bakeries]", "· Du Pain et des Idées, 34 Rue Yves Toudic [Bakeries]", "★ Poilâne, 8 Rue du Cherche-Midi [Bakeries]",
        ], "the reconnection pushed Poilâne and pulled the other device's place")
        let onlineStatus = await run("status")
        #expect(onlineStatus.count == 1 && onlineStatus[0].hasPrefix("status: online, 0 pending, last sync ok"), "\(onlineStatus)")
        let onServer = try await api.allLocations()
        #expect(Set(onServer.map(\.name)) == ["Du Pain et des Idées", "Poilâne", "Boulangerie Utopie"])
        #expect(onServer.first { $0.name == "Poilâne" }?.isFavorite == true)

        #expect(await run("refresh") == ["refreshed: pushed 0, pulled 0"])
        #expect(await run("delete Nowhere") == ["error: no place named Nowhere"])
        #expect(await !screen.run("quit"))
        #expect(transcript.since(0).contains("[live] 3 places"), "the live count followed the edits and the pull")
        await screen.disappear()
    }
}
