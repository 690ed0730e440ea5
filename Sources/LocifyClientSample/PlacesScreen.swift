import Foundation
import LocifyClient

/// The places screen of an app, driven by typed commands instead of taps (issue 26 item 7): it
/// lists and searches the local copy offline, edits it, shows the sync status, keeps a live list,
/// count and status line on screen (the README's SwiftUI places screen, issue 34), and lets
/// ``SyncEngine/start(_:)`` sync after edits and when the network comes back.
/// `locify-sample` runs it on standard input; the tests run it with a script.
public actor PlacesScreen {
    /// The commands, for `help`.
    public static let usage = """
        commands:
          categories                          the categories and their counts
          list [category]                     the places (of one category), by name
          search <text>                       places whose name, address or description contains <text>
          favorites                           the favourite places
          new-category <name>                 adds a category
          add <category> / <name> [/ <address>]  adds a place
          favorite <name>                     marks or unmarks a place as favourite
          delete <name>                       deletes a place
          offline | online                    what the path monitor would say (airplane mode)
          background | foreground             the scene's phase: stops the schedule, starts it again
          status                              online, pending changes, the last sync, the next planned one
          refresh                             pull-to-refresh: sync now and wait for it
          wait                                wait until every edit is synced (30 s at most)
          quit
        """

    private let engine: SyncEngine
    private let connectivity: ManualConnectivity
    private let print: @Sendable (String) -> Void
    private var schedule = SyncSchedule()
    private var scheduler: SyncScheduler?
    private var observations: [Task<Void, Never>] = []

    /// The live list's query: the first 100 places by name.
    private static let listQuery = LocalQuery(sort: .name).page(1, size: 100)

    /// A screen over `engine`, whose network state `connectivity` stands for; it writes its lines to `print`.
    public init(engine: SyncEngine, connectivity: ManualConnectivity, print: @escaping @Sendable (String) -> Void) {
        self.engine = engine
        self.connectivity = connectivity
        self.print = print
    }

    /// What a view's `.task` does on appearing: start the schedule, follow the list, the count and
    /// the status (lines beginning with `[live]`).
    public func appear(_ schedule: SyncSchedule = SyncSchedule()) async {
        self.schedule = schedule
        self.schedule.connectivity = connectivity
        scheduler = await engine.start(self.schedule)
        follow(engine.observeLocationCount(LocalQuery())) { "\($0) place\($0 == 1 ? "" : "s")" }
        follow(engine.observeLocations(Self.listQuery)) { "list: " + Self.listLine($0) }
        let statuses = await engine.statusUpdates()
        let print = self.print
        observations.append(Task { for await status in statuses { print("[live] status: " + Self.statusLine(status)) } })
    }

    /// Prints each value of `query` as `line` says, until ``disappear()``.
    private func follow<Value>(_ query: LiveQuery<Value>, _ line: @escaping @Sendable (Value) -> String) {
        let print = self.print
        observations.append(
            Task {
                do {
                    for try await value in query { print("[live] " + line(value)) }
                } catch {
                    print("[live] stopped: \(error)")
                }
            })
    }

    /// What the view does on disappearing (or the app at sign-out): stop syncing and observing.
    public func disappear() async {
        for observation in observations { observation.cancel() }
        observations = []
        await engine.stop()
        scheduler = nil
    }

    /// The status badge (the README's places screen shows the same text): what sync is doing, the
    /// changes waiting, when the copy was last complete.
    public static func statusLine(_ status: SyncStatus) -> String {
        var parts: [String] =
            switch status.activity {
            case .idle: status.pendingChanges == 0 ? ["up to date"] : []
            case .syncing(let progress): ["syncing \(progress.pushed)/\(progress.toPush)"]
            case .offline: ["offline"]
            case .failed(let error): ["sync failed (\(error.code ?? "network"))"]
            }
        if status.pendingChanges > 0 { parts.append("\(status.pendingChanges) to sync") }
        if let last = status.lastSyncedAt { parts.append("synced \(last.formatted(.relative(presentation: .named)))") }
        return parts.joined(separator: ", ")
    }

    /// The list's rows on one line: `★` marks a favourite.
    private static func listLine(_ places: [Location]) -> String {
        places.isEmpty ? "(no places)" : places.map { "\($0.isFavorite ? "★" : "·") \($0.name)" }.joined(separator: ", ")
    }

    /// Runs one command line; false for `quit`. A failure is printed, never thrown.
    public func run(_ line: String) async -> Bool {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        let (command, argument) = Self.split(trimmed)
        do {
            switch command {
            case "": break
            case "quit", "exit": return false
            case "help": print(Self.usage)
            case "categories":
                for category in try await engine.categories() { print("\(category.name) (\(category.locationCount))") }
            case "list": try await show(LocalQuery(categoryID: try await categoryID(argument, orAll: true), sort: .name))
            case "search": try await show(LocalQuery(search: argument, sort: .name))
            case "favorites": try await show(LocalQuery(isFavorite: true, sort: .name))
            case "new-category": print("added category \(try await engine.saveCategory(name: argument).name)")
            case "add": try await add(argument)
            case "favorite": try await toggleFavorite(argument)
            case "delete":
                try await engine.deleteLocation(id: try await place(named: argument).id)
                print("deleted \(argument)")
            case "offline":
                connectivity.set(false)
                print("offline: edits wait in the outbox")
            case "online":
                connectivity.set(true)
                print("online: syncing")
            case "background":
                await engine.stop()
                scheduler = nil
                print("background: the schedule stopped")
            case "foreground":
                scheduler = await engine.start(schedule)
                print("foreground: syncing")
            case "status": print(try await status())
            case "refresh":
                let report = try await engine.refresh()
                print("refreshed: pushed \(report.pushed), pulled \(report.pulled)")
            case "wait": print(try await waitUntilSynced())
            default: print("unknown command \(command) (help lists them)")
            }
        } catch let error as LocifyError {
            print("error \(error.code ?? "-"): \(error.serverError?.message ?? String(describing: error))")
        } catch {
            print("error: \(error)")
        }
        return true
    }

    /// One line: online or offline, the changes waiting, the last sync, the next planned one.
    public func status() async throws -> String {
        let pending = try await engine.pendingChanges().count
        var parts = [connectivity.isOnline ? "online" : "offline", "\(pending) pending"]
        if let scheduler {
            if await scheduler.isSyncing { parts.append("syncing") }
            switch await scheduler.lastResult {
            case .success(let report)?: parts.append("last sync ok (pushed \(report.pushed), pulled \(report.pulled))")
            case .failure(let error)?:
                parts.append("last sync failed: \(error.code ?? String(describing: error)), \(await scheduler.consecutiveFailures) in a row")
            case nil: parts.append("not synced yet")
            }
        }
        return "status: " + parts.joined(separator: ", ")
    }

    // MARK: Commands

    private func show(_ query: LocalQuery) async throws {
        let places = try await engine.locations(query)
        let names = Dictionary(uniqueKeysWithValues: try await engine.categories().map { ($0.id, $0.name) })
        if places.isEmpty { print("(no places)") }
        for place in places {
            let address = place.address.map { ", \($0)" } ?? ""
            print("\(place.isFavorite ? "★" : "·") \(place.name)\(address) [\(names[place.categoryID] ?? "?")]")
        }
    }

    private func add(_ argument: String) async throws {
        let fields = argument.components(separatedBy: "/").map { $0.trimmingCharacters(in: .whitespaces) }
        guard fields.count >= 2, let category = try await categoryID(fields[0], orAll: false) else {
            print("usage: add <category> / <name> [/ <address>]")
            return
        }
        let place = try await engine.saveLocation(
            LocationDraft(categoryID: category, name: fields[1], address: fields.count > 2 ? fields[2] : nil, latitude: 0, longitude: 0))
        print("added \(place.name)")
    }

    private func toggleFavorite(_ name: String) async throws {
        var draft = LocationDraft(editing: try await place(named: name))
        draft.isFavorite.toggle()
        let saved = try await engine.saveLocation(draft)
        print("\(saved.name) is \(saved.isFavorite ? "a favourite" : "no longer a favourite")")
    }

    /// Waits for the schedule to push every edit and finish its sync (what a spinner would show).
    private func waitUntilSynced() async throws -> String {
        for _ in 0..<600 {
            let pending = try await engine.pendingChanges().count
            let syncing = await scheduler?.isSyncing ?? false
            if pending == 0 && !syncing, case .success? = await scheduler?.lastResult { return "synced" }
            try await Task.sleep(for: .milliseconds(50))
        }
        return "not synced yet: " + (try await status())
    }

    private func categoryID(_ name: String, orAll: Bool) async throws -> UUID? {
        if name.isEmpty && orAll { return nil }
        guard let category = try await engine.categories().first(where: { $0.name.lowercased() == name.lowercased() }) else {
            throw ScreenError(description: "no category named \(name)")
        }
        return category.id
    }

    private func place(named name: String) async throws -> Location {
        guard let place = try await engine.locations(LocalQuery(search: name)).first(where: { $0.name.lowercased() == name.lowercased() })
        else { throw ScreenError(description: "no place named \(name)") }
        return place
    }

    private static func split(_ line: String) -> (String, String) {
        guard let space = line.firstIndex(of: " ") else { return (line, "") }
        return (String(line[..<space]), line[space...].trimmingCharacters(in: .whitespaces))
    }
}

/// A command that names nothing in the local copy.
struct ScreenError: Error, CustomStringConvertible {
    let description: String
}
