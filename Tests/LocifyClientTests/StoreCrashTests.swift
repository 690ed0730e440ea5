import Foundation
import GRDB
import LocifyClient
import Testing
import TestSupport
import TestSupportServer

#if canImport(Glibc)
    import Glibc
#endif

/// How many times the crash test kills its child (`LOCIFY_CLIENT_CRASH_KILLS`, default 100;
/// scripts/sanitizers sets 10, a child under a sanitizer being several times slower) and after how
/// many kills it plays a model history from the reopened store (`LOCIFY_CLIENT_CRASH_MODEL_EVERY`,
/// default 10; the last kill always does).
enum CrashSettings {
    static var kills: Int { ProcessInfo.processInfo.environment["LOCIFY_CLIENT_CRASH_KILLS"].flatMap { Int($0) } ?? 100 }
    static var modelEvery: Int { ProcessInfo.processInfo.environment["LOCIFY_CLIENT_CRASH_MODEL_EVERY"].flatMap { Int($0) } ?? 10 }
}

/// SQLiteStore under SIGKILL (issue 22 item 6): a child process (`LocifyClientCrashChild`) edits
/// and syncs on one store as fast as it can and is killed at a random moment, again and again.
/// Every reopen must be consistent (no half commit: the outbox and the records agree), and a model
/// history played from the reopened store must end with the device, the store and the server equal
/// to the model.
@Suite("SQLiteStore: killed at random moments, it reopens consistent", .serialized)
struct StoreCrashTests {
    static func childPath() throws -> String {
        let folder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let candidates = [folder.appendingPathComponent("LocifyClientCrashChild").path, ProjectPaths.root.appendingPathComponent(".build/debug/LocifyClientCrashChild").path]
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw SQLiteStoreCrashError(description: "no LocifyClientCrashChild at \(candidates): build it first (swift build)")
        }
        return found
    }

    @Test("a child making edits and syncs, killed with SIGKILL at random moments, leaves a store that reopens consistent and syncs to the model")
    func killedAtRandomMoments() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server, uid: "crash-\(UUID().uuidString.prefix(6))")
        let file = TemporaryStoreFile()
        defer { file.remove() }
        let child = try Self.childPath()
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("locify-crash-child-\(UUID()).log").path
        defer { try? FileManager.default.removeItem(atPath: log) }
        var random = SeededGenerator(seed: 22)
        var histories = 0
        var outboxSizes: [Int] = []
        let kills = CrashSettings.kills
        for round in 1...kills {
            let pid = try spawnProcess(
                [child],
                environment: [
                    "LOCIFY_CRASH_STORE": file.url.path, "LOCIFY_CRASH_SERVER": harness.baseURL.absoluteString,
                    "LOCIFY_CRASH_TOKEN": try server.token(for: harness.uid), "LOCIFY_CRASH_SEED": String(round),
                ], logPath: log)
            // The child starts, opens the store and edits within a few tens of milliseconds; it
            // commits every few milliseconds after that, and syncs one step in ten.
            try await Task.sleep(for: .milliseconds(Int.random(in: 20...350, using: &random)))
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            let childLog = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            #expect(status & 0x7f == SIGKILL, "round \(round): the child was killed, it did not stop by itself: \(childLog.suffix(500))")

            let store = try file.open()
            outboxSizes.append(try Self.expectConsistent(store, round: round))
            if round % CrashSettings.modelEvery == 0 || round == kills {
                histories += 1
                let run = try await HistoryRun(resuming: file, harness, seed: UInt64(round))
                defer { run.finish() }
                try await run.play(actions: 40)
                try await run.expectFinalStateEqualsModel()
            }
        }
        print("client-crash: kills \(kills) histories \(histories) outbox entries at reopen: max \(outboxSizes.max() ?? 0), mean \(outboxSizes.reduce(0, +) / max(outboxSizes.count, 1))")
    }

    /// The store as a crash left it: SQLite's integrity check passes, every place's category is
    /// there, every record never acknowledged by the server has a pending change, and each
    /// record's last pending change agrees with the record. Returns the outbox's size.
    static func expectConsistent(_ store: SQLiteStore, round: Int) throws -> Int {
        let integrity = try store.database.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") }
        #expect(integrity == "ok", "round \(round): integrity_check")
        let metadata = try store.metadata()
        let outbox = try store.outbox()
        let categories = Dictionary(uniqueKeysWithValues: try store.categories().map { ($0.id, $0) })
        let locations = Dictionary(uniqueKeysWithValues: try store.locations(LocalQuery(limit: nil)).map { ($0.id, $0) })
        #expect(metadata.nextOutboxID > (outbox.map(\.id).max() ?? 0), "round \(round): the next outbox id is past every entry")
        for location in locations.values {
            #expect(categories[location.categoryID] != nil, "round \(round): \(location.name)'s category is in the store")
        }
        let pending = Set(outbox.map(\.change.recordID))
        for record in categories.values where record.version == 0 {
            #expect(pending.contains(record.id), "round \(round): \(record.name), never acknowledged, is in the outbox")
        }
        for record in locations.values where record.version == 0 {
            #expect(pending.contains(record.id), "round \(round): \(record.name), never acknowledged, is in the outbox")
        }
        let deletedCategories = Set(outbox.compactMap { entry -> UUID? in
            if case .deleteCategory(let delete) = entry.change { return delete.id }
            return nil
        })
        var last: [UUID: OutboxEntry] = [:]
        for entry in outbox { last[entry.change.recordID] = entry }
        for entry in last.values {
            switch entry.change {
            case .deleteCategory(let delete):
                #expect(categories[delete.id] == nil, "round \(round): a category with a pending delete is gone")
            case .deleteLocation(let delete):
                #expect(locations[delete.id] == nil, "round \(round): a location with a pending delete is gone")
            case .createCategory(let write), .updateCategory(let write):
                #expect(categories[write.id]?.name == write.name, "round \(round): category \(write.name) is as its pending change says")
            case .createLocation(let write), .updateLocation(let write):
                if deletedCategories.contains(write.categoryID) { continue }  // removed or moved by the pending delete
                #expect(locations[write.id]?.name == write.name, "round \(round): location \(write.name) is as its pending change says")
            case .patchCategory(let patch) where patch.fields.contains(.name):
                #expect(categories[patch.id]?.name == patch.values.name, "round \(round): category \(patch.values.name) is as its pending patch says")
            case .patchLocation(let patch) where patch.fields.contains(.name):
                // A place in a category with a pending delete is removed or moved by it.
                if let location = locations[patch.id], !deletedCategories.contains(location.categoryID) {
                    #expect(location.name == patch.values.name, "round \(round): location \(patch.values.name) is as its pending patch says")
                } else if deletedCategories.isEmpty {
                    Issue.record("round \(round): location \(patch.values.name) with a pending patch is gone")
                }
            case .patchCategory, .patchLocation:
                continue
            }
        }
        return outbox.count
    }
}

struct SQLiteStoreCrashError: Error, CustomStringConvertible {
    var description: String
}
