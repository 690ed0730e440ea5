// locify-sample: LocifyClient's places screen on the command line (PlacesScreen). Against the
// development server:
//   scripts/dev                                   # in one terminal
//   LOCIFY_TOKEN=$(scripts/dev-token alice) swift run locify-sample [--server URL] [--store PATH]
// then type `help`. The store (default: locify-sample.sqlite in the temporary folder, one user's) survives runs,
// so what was edited offline and not yet synced is still waiting at the next start.
import Foundation
import LocifyClient
import LocifyClientSample

var options: [String: String] = [:]
var arguments = CommandLine.arguments.dropFirst()
while let name = arguments.popFirst() {
    guard name.hasPrefix("--"), let value = arguments.popFirst() else {
        FileHandle.standardError.write(Data("usage: locify-sample [--server URL] [--store PATH] [--token TOKEN]\n".utf8))
        exit(2)
    }
    options[String(name.dropFirst(2))] = value
}
let environment = ProcessInfo.processInfo.environment
guard let token = options["token"] ?? environment["LOCIFY_TOKEN"], !token.isEmpty else {
    FileHandle.standardError.write(Data("locify-sample: set LOCIFY_TOKEN (LOCIFY_TOKEN=$(scripts/dev-token alice)) or pass --token\n".utf8))
    exit(2)
}
guard let server = URL(string: options["server"] ?? environment["LOCIFY_SERVER"] ?? "http://127.0.0.1:8080") else {
    FileHandle.standardError.write(Data("locify-sample: --server is not a URL\n".utf8))
    exit(2)
}
// A store belongs to one user: give each user's runs a store of their own.
let storePath = options["store"] ?? FileManager.default.temporaryDirectory.appendingPathComponent("locify-sample.sqlite").path

let api = LocifyAPIClient(baseURL: server) { _ in token }
let engine = SyncEngine(api: api, store: try SQLiteStore(path: storePath))
let screen = PlacesScreen(engine: engine, connectivity: ManualConnectivity()) { line in print(line) }
print("locify-sample on \(server.absoluteString), store \(storePath); `help` lists the commands")
// Live in the foreground: another device's change shows within milliseconds, as in the README's places screen.
var schedule = SyncSchedule()
schedule.liveInForeground = LiveSyncSettings()
await screen.appear(schedule)
while let line = readLine() {
    guard await screen.run(line) else { break }
}
await screen.disappear()
