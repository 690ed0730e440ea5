import Foundation
import LocifyClient

// The child process of the SQLite store's crash test (Tests/LocifyClientTests/StoreCrashTests):
// edits and syncs as fast as it can, forever, on the store at LOCIFY_CRASH_STORE against the
// server at LOCIFY_CRASH_SERVER with the token LOCIFY_CRASH_TOKEN, until the test kills it with
// SIGKILL. Random choices come from LOCIFY_CRASH_SEED.

let environment = ProcessInfo.processInfo.environment
guard let storePath = environment["LOCIFY_CRASH_STORE"], let server = environment["LOCIFY_CRASH_SERVER"].flatMap(URL.init(string:)),
    let token = environment["LOCIFY_CRASH_TOKEN"]
else {
    FileHandle.standardError.write(Data("usage: LOCIFY_CRASH_STORE=... LOCIFY_CRASH_SERVER=... LOCIFY_CRASH_TOKEN=... \(CommandLine.arguments[0])\n".utf8))
    exit(2)
}

/// SplitMix64: the same choices for the same seed.
struct Generator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

var random = Generator(state: UInt64(environment["LOCIFY_CRASH_SEED"] ?? "") ?? 1)
let api = LocifyAPIClient(baseURL: server, timeout: 10) { _ in token }
let engine = SyncEngine(api: api, store: try SQLiteStore(path: storePath))
var step = 0
while true {
    step += 1
    do {
        let categories = try await engine.categories()
        let locations = try await engine.locations(LocalQuery(limit: 200))
        switch Int.random(in: 0..<100, using: &random) {
        case 0..<10:
            try await engine.sync()
        case 10..<20 where categories.count < 12:
            try await engine.saveCategory(name: "Crash \(step)")
        case 20..<25 where categories.count > 3:
            let victim = categories[Int.random(in: 0..<categories.count, using: &random)]
            let target = Bool.random(using: &random) ? categories.first { $0.id != victim.id }?.id : nil
            try await engine.deleteCategory(id: victim.id, reassignTo: target)
        case 25..<30 where !categories.isEmpty:
            let category = categories[Int.random(in: 0..<categories.count, using: &random)]
            try await engine.saveCategory(id: category.id, name: category.name + "'")
        case 30..<70 where !categories.isEmpty:
            let category = categories[Int.random(in: 0..<categories.count, using: &random)]
            try await engine.saveLocation(
                LocationDraft(categoryID: category.id, name: "Place \(step)", latitude: 1, longitude: 2, isFavorite: Bool.random(using: &random)))
        case 70..<90 where !locations.isEmpty && !categories.isEmpty:
            var draft = LocationDraft(locations[Int.random(in: 0..<locations.count, using: &random)])
            draft.name += "'"
            if Bool.random(using: &random) { draft.categoryID = categories[Int.random(in: 0..<categories.count, using: &random)].id }
            try await engine.saveLocation(draft)
        case 90..<100 where !locations.isEmpty:
            try await engine.deleteLocation(id: locations[Int.random(in: 0..<locations.count, using: &random)].id)
        default:
            break
        }
    } catch let error as LocifyError where error.isTransient {
    } catch {
        FileHandle.standardError.write(Data("crash child: \(error)\n".utf8))
        exit(1)
    }
}
