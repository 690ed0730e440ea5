import Foundation
import LocifyClient

// bench/client: LocifyClient on a real account (bench/client/run seeds it and starts the server).
//
//   LocifyClientBenchmark <base URL> <ID token> <store folder> [edits]
//
// Measures, in one run: the change feed pulled raw (no store) as the reference; the first sync
// of the whole account into an empty SQLiteStore (when the first page of the list is usable, the
// whole of it, and the process's resident memory before, at its peak and after); local edits on
// the full store (each timed); and pushing them. Prints a Markdown table. Not a test: nothing here
// asserts a figure.

let arguments = CommandLine.arguments
guard arguments.count >= 4, let base = URL(string: arguments[1]) else {
    FileHandle.standardError.write(Data("usage: LocifyClientBenchmark <base URL> <ID token> <store folder> [edits]\n".utf8))
    exit(2)
}
let token = arguments[2]
let folder = URL(fileURLWithPath: arguments[3])
let edits = arguments.count > 4 ? Int(arguments[4]) ?? 1000 : 1000

/// VmRSS and VmHWM of this process, in MB (Linux /proc; 0 elsewhere).
func memory() -> (rss: Double, peak: Double) {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return (0, 0) }
    func field(_ name: String) -> Double {
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return 0 }
        return (Double(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) / 1024
    }
    return (field("VmRSS"), field("VmHWM"))
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

func percentile(_ values: [Double], _ fraction: Double) -> Double {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int((Double(sorted.count) * fraction).rounded(.up)) - 1)]
}

let api = LocifyAPIClient(baseURL: base, timeout: 120) { _ in token }
let clock = ContinuousClock()
var rows: [(String, String)] = []

// 1. The feed alone: every page of a snapshot, decoded, nothing stored.
var rawCount = 0
let rawStart = clock.now
var cursor: String?
repeat {
    let page = try await api.pull(since: cursor, limit: 1000)
    rawCount += page.changes.count
    cursor = page.cursor
    if !page.hasMore { break }
} while true
let rawSeconds = seconds(clock.now - rawStart)
rows.append(("snapshot feed pulled and decoded, no store (reference)", String(format: "%.2f s for %d records", rawSeconds, rawCount)))

// 2. The first sync into an empty store, with a reader polling the first page of the list.
try? FileManager.default.removeItem(at: folder)
try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
let store = try SQLiteStore(path: folder.appendingPathComponent("bench.sqlite").path)
let engine = SyncEngine(api: api, store: store)
await engine.setPullLimit(1000)
let before = memory()
let syncStart = clock.now
let firstPage = Task { () -> Duration? in
    while !Task.isCancelled {
        if (try? await engine.locations(LocalQuery(limit: 20)).count) == 20 { return clock.now - syncStart }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return nil
}
let report = try await engine.sync()
let syncSeconds = seconds(clock.now - syncStart)
firstPage.cancel()
let firstPageSeconds = (await firstPage.value).map(seconds) ?? .nan
let after = memory()
let stored = try await engine.categories().reduce(0) { $0 + $1.locationCount }
rows.append(("first sync: first page of the list usable", String(format: "%.2f s", firstPageSeconds)))
rows.append(
    (
        "first sync: whole account stored",
        String(
            format: "%.2f s for %d feed entries (%d locations); %.2fx the raw feed", syncSeconds, report.pulled, stored,
            syncSeconds / rawSeconds)
    ))
rows.append(
    (
        "resident memory: before, peak, after the first sync",
        String(
            format: "%.1f MB, %.1f MB, %.1f MB (growth %.1f MB at the peak)", before.rss, after.peak, after.rss,
            after.peak - before.rss)
    ))

// 3. Local edits on the full store, each timed.
let sample = try await engine.locations(LocalQuery(limit: edits, offset: 5_000))
let categories = try await engine.categories()
var timings: [Double] = []
for (index, location) in sample.enumerated() {
    var draft = LocationDraft(location)
    draft.name = location.name + " (edited)"
    draft.isFavorite.toggle()
    if index % 4 == 0 { draft.categoryID = categories[index % categories.count].id }
    let start = clock.now
    try await engine.saveLocation(draft)
    timings.append(seconds(clock.now - start) * 1000)
}
rows.append(
    (
        "local edit at \(stored) locations (\(timings.count) edits)",
        String(
            format: "p50 %.3f ms, p99 %.3f ms, max %.3f ms", percentile(timings, 0.5), percentile(timings, 0.99),
            timings.max() ?? 0)
    ))
let createStart = clock.now
let created = try await engine.saveLocation(LocationDraft(categoryID: categories[0].id, name: "New", latitude: 1, longitude: 2))
rows.append(("local create", String(format: "%.3f ms", seconds(clock.now - createStart) * 1000)))
let deleteStart = clock.now
try await engine.deleteLocation(id: created.id)
rows.append(("local delete", String(format: "%.3f ms", seconds(clock.now - deleteStart) * 1000)))
let pushStart = clock.now
let pushed = try await engine.sync()
rows.append(("sync pushing the edits", String(format: "%.2f s for %d changes", seconds(clock.now - pushStart), pushed.pushed)))
let end = memory()
rows.append(("resident memory at the end", String(format: "%.1f MB (peak %.1f MB)", end.rss, end.peak)))

print("| measure | figure |")
print("|---|---|")
for (name, figure) in rows { print("| \(name) | \(figure) |") }
