import Foundation
import LocifyClient
import Synchronization

// bench/live-client: LocifyClient's live mode against a running server (bench/live-client/run
// starts one).
//
//   LiveSyncBenchmark <base URL> <ID token> <store folder> [devices] [changes]
//
// Opens `devices` engines of one user, each on its own SQLiteStore, all in live mode. Then, one
// device after the other, `changes` times: a device saves a new place and calls sync(); the time
// from that call to each other device's store holding the place is measured (the other devices
// never call sync(): their long-poll brings it). Prints a Markdown table. Not a test: nothing here
// asserts a figure.

let arguments = CommandLine.arguments
guard arguments.count >= 4, let base = URL(string: arguments[1]) else {
    FileHandle.standardError.write(Data("usage: LiveSyncBenchmark <base URL> <ID token> <store folder> [devices] [changes]\n".utf8))
    exit(2)
}
let token = arguments[2]
let folder = URL(fileURLWithPath: arguments[3])
let deviceCount = arguments.count > 4 ? max(2, Int(arguments[4]) ?? 3) : 3
let changes = arguments.count > 5 ? Int(arguments[5]) ?? 300 : 300

func milliseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
}

func percentile(_ values: [Double], _ fraction: Double) -> Double {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int((Double(sorted.count) * fraction).rounded(.up)) - 1)]
}

/// When each device's store first held the place being measured: a watcher per device checks
/// its store after each page its sync events report applied.
final class Arrivals: Sendable {
    private let state = Mutex<(target: UUID?, arrived: [Int: ContinuousClock.Instant])>((nil, [:]))

    func expect(_ id: UUID) { state.withLock { $0 = (id, [:]) } }
    var target: UUID? { state.withLock { $0.target } }
    func arrived(_ device: Int, _ id: UUID, at instant: ContinuousClock.Instant) {
        state.withLock { if $0.target == id && $0.arrived[device] == nil { $0.arrived[device] = instant } }
    }
    var all: [Int: ContinuousClock.Instant] { state.withLock { $0.arrived } }

    func watch(_ engine: SyncEngine, as device: Int) async -> Task<Void, Never> {
        let events = await engine.events()
        return Task {
            for await event in events {
                guard case .pulled(let changes, _) = event, changes > 0, let id = target else { continue }
                if (try? await engine.location(id: id)) != nil { arrived(device, id, at: .now) }
            }
        }
    }
}

/// Runs the measurement: (sync() called -> arrival, sync() answered -> arrival, sync() itself), in ms.
func measure() async throws -> (fromCall: [Double], fromAnswer: [Double], syncs: [Double]) {
    try? FileManager.default.removeItem(at: folder)
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let api = LocifyAPIClient(baseURL: base, timeout: 30) { _ in token }
    let arrivals = Arrivals()
    var engines: [SyncEngine] = []
    var watchers: [Task<Void, Never>] = []
    for index in 0..<deviceCount {
        let engine = SyncEngine(api: api, store: try SQLiteStore(path: folder.appendingPathComponent("device-\(index).sqlite").path))
        engines.append(engine)
        watchers.append(await arrivals.watch(engine, as: index))
    }
    let category = try await engines[0].saveCategory(name: "Live benchmark \(UUID().uuidString.prefix(8))")
    try await engines[0].sync()
    let tasks = engines.map { $0.live() }
    for engine in engines {
        while try await engine.category(id: category.id) == nil { try await Task.sleep(for: .milliseconds(5)) }
    }

    let clock = ContinuousClock()
    var fromCall: [Double] = []
    var fromAnswer: [Double] = []
    var syncs: [Double] = []
    for change in 0..<changes {
        let writer = change % deviceCount
        let id = UUID()
        arrivals.expect(id)
        try await engines[writer].saveLocation(
            LocationDraft(id: id, categoryID: category.id, name: "Change \(change)", latitude: 48.85, longitude: 2.35))
        let called = clock.now
        try await engines[writer].sync()
        let answered = clock.now
        syncs.append(milliseconds(answered - called))
        while arrivals.all.keys.filter({ $0 != writer }).count < deviceCount - 1 {
            try await Task.sleep(for: .milliseconds(1))
        }
        for (device, arrived) in arrivals.all where device != writer {
            fromCall.append(milliseconds(arrived - called))
            fromAnswer.append(max(0, milliseconds(arrived - answered)))
        }
    }
    for task in tasks + watchers { task.cancel() }
    for task in tasks { await task.value }
    return (fromCall, fromAnswer, syncs)
}

func row(_ label: String, _ values: [Double]) -> String {
    let figures = [percentile(values, 0.5), percentile(values, 0.9), percentile(values, 0.99), values.max() ?? 0]
    return "| \(label) | \(values.count) | " + figures.map { String(format: "%.1f", $0) }.joined(separator: " | ") + " |"
}
let (fromCall, fromAnswer, syncs) = try await measure()
print("\(deviceCount) devices of one user in live mode (SQLiteStore), \(changes) changes, each on one device then sync()\n")
print("| interval | n | p50 ms | p90 ms | p99 ms | max ms |")
print("|---|---|---|---|---|---|")
print(row("sync() called on the writer -> the place in another device's store", fromCall))
print(row("writer's sync() returned -> the place in another device's store", fromAnswer))
print(row("writer's sync() (push, then pull to the end)", syncs))
