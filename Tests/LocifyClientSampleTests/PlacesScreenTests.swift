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
    func since(_ mark: Int) -> [String] { lines.withLock { Array($0.dropFirst(max(mark, 0))) } }

    var count: Int { lines.withLock { $0.count } }

    /// The number of the first line from line `mark` on that `matches`, waited for up to a minute
    /// (a deadline for a hung test, never a measure): nil when none came.
    func firstLine(from mark: Int, where matches: (String) -> Bool) async throws -> Int? {
        for _ in 0..<3000 {
            if let index = since(mark).firstIndex(where: matches) { return mark + index }
            try await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }
}

/// `locify-sample`'s screen over a fresh user's SQLite store, against a real server and PostgreSQL.
struct Sample {
    let server: TestServer
    let url: URL
    let token: String
    let store: URL
    let api: LocifyAPIClient
    let connectivity: ManualConnectivity
    let transcript: Transcript
    let screen: PlacesScreen

    /// Starts a server and the screen on `schedule` (its connectivity is the sample's).
    static func start(_ schedule: SyncSchedule) async throws -> Sample {
        let server = try TestServer.start()
        let token = try server.token(for: "sample-\(UUID().uuidString.prefix(6))")
        // safe because: the literal is a valid URL
        let url = URL(string: "http://127.0.0.1:\(server.port)")!
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("locify-sample-test-\(UUID()).sqlite")
        let api = LocifyAPIClient(baseURL: url) { _ in token }
        let engine = SyncEngine(api: api, store: try SQLiteStore(path: store.path))
        let transcript = Transcript()
        let connectivity = ManualConnectivity()
        let screen = PlacesScreen(engine: engine, connectivity: connectivity) { transcript.append($0) }
        let sample = Sample(
            server: server, url: url, token: token, store: store, api: api, connectivity: connectivity, transcript: transcript, screen: screen)
        await screen.appear(schedule)
        return sample
    }

    /// Another device of the same user, with an in-memory copy.
    func otherDevice() -> SyncEngine {
        SyncEngine(api: LocifyAPIClient(baseURL: url) { [token] _ in token }, store: InMemoryStore())
    }

    /// Runs the commands and returns what they printed, the `[live]` lines left out.
    func run(_ commands: String...) async -> [String] {
        let mark = transcript.count
        for command in commands { #expect(await screen.run(command)) }
        return transcript.since(mark).filter { !$0.hasPrefix("[live]") }
    }

    /// The number of the first `[live] <kind>: ` line after line `mark` whose text `matches`
    /// (waited for); the test fails when none came.
    func live(_ kind: String, after mark: Int, where matches: (String) -> Bool) async throws -> Int {
        let prefix = "[live] \(kind): "
        let line = try await transcript.firstLine(from: mark + 1) { $0.hasPrefix(prefix) && matches(String($0.dropFirst(prefix.count))) }
        return try #require(line, "no \(kind) line after line \(mark) as expected: \(transcript.since(mark + 1))")
    }

    func stop() {
        server.stop()
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: store.path + suffix) }
    }
}

/// The sample (issue 26 item 7): `locify-sample`'s screen against a real server and PostgreSQL,
/// as an app screen uses the engine (list, search, edit offline, status, sync on reconnect).
@Suite("locify-sample: the places screen against the server (issue 26 item 7)")
struct PlacesScreenTests {
    @Test("edits made offline are listed, searched and counted at once, and synced by start() when the network comes back")
    func offlineEditsSyncOnReconnect() async throws {
        var schedule = SyncSchedule()
        schedule.debounce = .milliseconds(100)
        let sample = try await Sample.start(schedule)
        defer { sample.stop() }

        #expect(
            await sample.run("new-category Bakeries", "add Bakeries / Du Pain et des Idées / 34 Rue Yves Toudic") == [
                "added category Bakeries", "added Du Pain et des Idées",
            ])
        #expect(await sample.run("wait") == ["synced"], "start() pushed the edits after the debounce")
        #expect(try await sample.api.allLocations().map(\.name) == ["Du Pain et des Idées"])

        #expect(
            await sample.run("offline", "add Bakeries / Poilâne / 8 Rue du Cherche-Midi", "favorite Poilâne") == [
                "offline: edits wait in the outbox", "added Poilâne", "Poilâne is a favourite",
            ])
        // Another device adds a place meanwhile.
        let other = sample.otherDevice()
        try await other.sync()
        let bakeries = try #require(try await other.categories().first { $0.name == "Bakeries" })
        try await other.saveLocation(LocationDraft(categoryID: bakeries.id, name: "Boulangerie Utopie", latitude: 48.86, longitude: 2.37))
        try await other.sync()

        let offlineAnswers = await sample.run("search POIL", "favorites", "categories")
        #expect(
            offlineAnswers == [
                "★ Poilâne, 8 Rue du Cherche-Midi [Bakeries]", "★ Poilâne, 8 Rue du Cherche-Midi [Bakeries]", "Bakeries (2)",
                "Cafe (0)", "Favorites (0)", "Restaurant (0)", "Tourist Attraction (0)",  // a new account's defaults
            ], "the local copy answers offline")
        let offlineStatus = await sample.run("status")
        #expect(offlineStatus.count == 1 && offlineStatus[0].hasPrefix("status: offline, 1 pending, last sync ok"), "\(offlineStatus)")
        #expect(try await sample.api.allLocations().count == 2, "nothing was sent while offline")

        #expect(await sample.run("online", "wait") == ["online: syncing", "synced"])
        #expect(
            await sample.run("list") == [
                "· Boulangerie Utopie [Bakeries]", "· Du Pain et des Idées, 34 Rue Yves Toudic [Bakeries]", "★ Poilâne, 8 Rue du Cherche-Midi [Bakeries]",
            ], "the reconnection pushed Poilâne and pulled the other device's place")
        let onlineStatus = await sample.run("status")
        #expect(onlineStatus.count == 1 && onlineStatus[0].hasPrefix("status: online, 0 pending, last sync ok"), "\(onlineStatus)")
        let onServer = try await sample.api.allLocations()
        #expect(Set(onServer.map(\.name)) == ["Du Pain et des Idées", "Poilâne", "Boulangerie Utopie"])
        #expect(onServer.first { $0.name == "Poilâne" }?.isFavorite == true)

        #expect(await sample.run("refresh") == ["refreshed: pushed 0, pulled 0"])
        #expect(await sample.run("delete Nowhere") == ["error: no place named Nowhere"])
        #expect(await !sample.screen.run("quit"))
        #expect(sample.transcript.since(0).contains("[live] 3 places"), "the live count followed the edits and the pull")
        await sample.screen.disappear()
    }

    @Test(
        "the README's places screen on Linux: a live list and status line, an offline favourite, another device's place shown by live mode, the schedule stopped and started with the scene, pull-to-refresh (issue 34)"
    )
    func readmePlacesScreen() async throws {
        var schedule = SyncSchedule()
        schedule.liveInForeground = LiveSyncSettings()
        let sample = try await Sample.start(schedule)
        defer { sample.stop() }

        // Each wait starts after the line before, so that no line printed earlier answers it.
        var line = sample.transcript.count - 1
        #expect(await sample.run("new-category Bakeries", "add Bakeries / Poilâne") == ["added category Bakeries", "added Poilâne"])
        line = try await sample.live("list", after: line) { $0 == "· Poilâne" }
        line = try await sample.live("status", after: line) { $0.hasPrefix("up to date, synced ") }  // live mode pushed both edits
        #expect(try await sample.api.allLocations().map(\.name) == ["Poilâne"])

        // Offline: the favourite shows at once and waits in the outbox; the badge says so.
        line = sample.transcript.count - 1
        #expect(await sample.run("offline", "favorite Poilâne") == ["offline: edits wait in the outbox", "Poilâne is a favourite"])
        _ = try await sample.live("list", after: line) { $0 == "★ Poilâne" }
        line = try await sample.live("status", after: line) { $0.hasPrefix("offline, 1 to sync, synced ") }
        // (The server is not asked here: "offline" is the sample's connectivity flag over a network
        // that still works, and a live-mode round already under way may push the edit.)

        #expect(await sample.run("online") == ["online: syncing"])
        line = try await sample.live("status", after: line) { $0.hasPrefix("up to date, synced ") }
        #expect(try await sample.api.allLocations().first?.isFavorite == true, "back online, the favourite was pushed")

        // Live updates: another device's place shows without any command (live mode's long-poll).
        let other = sample.otherDevice()
        try await other.sync()
        let bakeries = try #require(try await other.categories().first { $0.name == "Bakeries" })
        try await other.saveLocation(LocationDraft(categoryID: bakeries.id, name: "Boulangerie Utopie", latitude: 48.86, longitude: 2.37))
        try await other.sync()
        line = try await sample.live("list", after: line) { $0 == "· Boulangerie Utopie, ★ Poilâne" }

        // The scene goes to the background (the schedule stops) and comes back: the start syncs at once.
        #expect(await sample.run("background") == ["background: the schedule stopped"])
        try await other.saveLocation(LocationDraft(categoryID: bakeries.id, name: "Mamiche", latitude: 48.88, longitude: 2.34))
        try await other.sync()
        line = sample.transcript.count - 1
        #expect(await sample.run("foreground") == ["foreground: syncing"])
        _ = try await sample.live("list", after: line) { $0 == "· Boulangerie Utopie, · Mamiche, ★ Poilâne" }

        // Pull-to-refresh: one more sync, nothing left to move.
        #expect(await sample.run("refresh") == ["refreshed: pushed 0, pulled 0"])
        await sample.screen.disappear()
    }

    @Test("the README's places screen shows the badge exactly as the sample computes it (PlacesScreen.statusLine)")
    func readmeBadgeIsTheSample() throws {
        /// The badge's computation in `text`: from its `var parts` to its `return`.
        func badge(in text: String) throws -> Substring {
            let begin = try #require(text.range(of: "        var parts: [String] =\n"))
            let end = try #require(text.range(of: "return parts.joined(separator: \", \")", range: begin.upperBound..<text.endIndex))
            return text[begin.lowerBound..<end.upperBound]
        }
        let readme = try String(contentsOf: ProjectPaths.root.appendingPathComponent("README.md"), encoding: .utf8)
        let sample = try String(
            contentsOf: ProjectPaths.root.appendingPathComponent("Sources/LocifyClientSample/PlacesScreen.swift"), encoding: .utf8)
        #expect(try badge(in: readme) == badge(in: sample))
    }
}
