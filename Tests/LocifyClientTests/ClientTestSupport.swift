import Foundation
import LocifyClient
import Synchronization
import Testing
import TestSupport
import TestSupportServer

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A LocifyClient pointed at a TestServer: one user, a token minted by the server's test key.
struct ClientHarness: Sendable {
    let server: TestServer
    let uid: String
    /// The user's token, signed once (an RSA signature per request cost a tenth of a history's CPU).
    private let token = TokenCache()

    init(_ server: TestServer, uid: String = "user-\(UUID().uuidString.prefix(8))") {
        self.server = server
        self.uid = uid
    }

    /// Harnesses of two users of `server`, Alice and Bob (for tests of one device, two accounts).
    static func twoUsers(_ server: TestServer) -> (alice: ClientHarness, bob: ClientHarness) {
        (ClientHarness(server, uid: "alice-\(UUID().uuidString.prefix(6))"), ClientHarness(server, uid: "bob-\(UUID().uuidString.prefix(6))"))
    }

    var baseURL: URL {
        // safe because: the literal is a valid URL
        URL(string: "http://127.0.0.1:\(server.port)")!
    }

    /// A token provider for this user.
    var tokens: LocifyAPIClient.TokenProvider {
        let server = server, uid = uid, token = token
        return { forceRefresh in
            try token.value.withLock { token in
                if let token, !forceRefresh { return token }
                let fresh = try server.token(for: uid)
                token = fresh
                return fresh
            }
        }
    }

    /// An API client on the plain network.
    func api() -> LocifyAPIClient {
        LocifyAPIClient(baseURL: baseURL, timeout: 20, token: tokens)
    }

    /// An API client whose requests go through `FaultInjectingURLProtocol` as `device`.
    func faultyAPI(device: String) -> LocifyAPIClient {
        // safe because: device names are letters and digits
        let url = URL(string: "http://\(device).fault.test:\(server.port)")!
        return LocifyAPIClient(baseURL: url, session: FaultInjectingURLProtocol.session(), timeout: 20, token: tokens)
    }
}

/// One user's token, shared by the API clients of a harness.
final class TokenCache: Sendable {
    let value = Mutex<String?>(nil)
}

/// A device clock whose offset from the real one the test changes while it runs (the user sets
/// the device's time after its last sync, so the offset the engine learnt is off by as much).
final class SettableClock: Sendable {
    private let offset = Mutex<TimeInterval>(0)

    func set(offset seconds: TimeInterval) { offset.withLock { $0 = seconds } }

    var read: @Sendable () -> Date {
        { [self] in Date().addingTimeInterval(offset.withLock { $0 }) }
    }
}

/// A device clock `offset` seconds away from the real one.
func offsetClock(_ offset: TimeInterval) -> @Sendable () -> Date {
    { Date().addingTimeInterval(offset) }
}

/// Collects a SyncEngine's events in the background.
final class EventLog: Sendable {
    private final class Storage: Sendable {
        let events = Mutex<[SyncEvent]>([])
    }

    private let storage = Storage()
    private let task: Task<Void, Never>

    init(_ engine: SyncEngine) async {
        let stream = await engine.events()
        let storage = self.storage
        task = Task {
            for await event in stream { storage.events.withLock { $0.append(event) } }
        }
    }

    var all: [SyncEvent] { storage.events.withLock { $0 } }

    /// Waits until the events delivered so far include one matching `predicate` (1 s at most).
    func contains(_ predicate: (SyncEvent) -> Bool) async -> Bool {
        for _ in 0..<100 {
            if all.contains(where: predicate) { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return false
    }

    func stop() { task.cancel() }

    deinit { task.cancel() }
}

/// The server's live records through the REST listings, and the snapshot feed.
struct ServerView: Sendable, Equatable {
    var categories: [UUID: Category]
    var locations: [UUID: Location]

    static func listings(_ api: LocifyAPIClient) async throws -> ServerView {
        let categories = try await api.allCategories()
        let locations = try await api.allLocations()
        return ServerView(
            categories: Dictionary(uniqueKeysWithValues: categories.map { ($0.id, $0) }),
            locations: Dictionary(uniqueKeysWithValues: locations.map { ($0.id, $0) }))
    }

    /// A snapshot pull followed to its end.
    static func snapshotFeed(_ api: LocifyAPIClient) async throws -> ServerView {
        var view = ServerView(categories: [:], locations: [:])
        var cursor: String?
        repeat {
            let page = try await api.pull(since: cursor, limit: 100)
            for change in page.changes {
                switch change {
                case .upsert(.category(let category)): view.categories[category.id] = category
                case .upsert(.location(let location)): view.locations[location.id] = location
                default: Issue.record("a snapshot holds no deletion: \(change)")
                }
            }
            cursor = page.cursor
            if !page.hasMore { break }
        } while true
        return view
    }

    /// The records compared the way a device keeps them: `location_count` is counted locally.
    var comparable: ServerView {
        var view = self
        for id in view.categories.keys { view.categories[id]?.locationCount = 0 }
        return view
    }

    /// The records that differ, one line each ("device" is this view, "server" the other).
    func difference(from server: ServerView, explain: (RecordKind, UUID) -> String = { _, _ in "" }) -> String {
        var lines: [String] = []
        for id in Set(categories.keys).union(server.categories.keys) where categories[id] != server.categories[id] {
            lines.append(
                "category \(id.uuidString.prefix(8)): device \(Self.describe(categories[id])), server \(Self.describe(server.categories[id]))"
                    + " \(explain(.category, id))")
        }
        for id in Set(locations.keys).union(server.locations.keys) where locations[id] != server.locations[id] {
            lines.append(
                "location \(id.uuidString.prefix(8)): device \(Self.describe(locations[id])), server \(Self.describe(server.locations[id]))"
                    + " \(explain(.location, id))")
        }
        return lines.sorted().joined(separator: "\n")
    }

    private static func describe(_ category: Category?) -> String {
        guard let category else { return "nothing" }
        return "\(category.name) v\(category.version) @\(category.updatedAt.locifyMilliseconds)"
    }

    private static func describe(_ location: Location?) -> String {
        guard let location else { return "nothing" }
        return "\(location.name) in \(location.categoryID.uuidString.prefix(4)) v\(location.version) @\(location.updatedAt.locifyMilliseconds)"
    }

    static func device(_ engine: SyncEngine) async throws -> ServerView {
        let snapshot = try await engine.localSnapshot()
        return ServerView(categories: snapshot.categories, locations: snapshot.locations).comparable
    }
}

/// A SQLite store in a temporary file, which a test can open again as a relaunched app would.
struct TemporaryStoreFile: Sendable {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("locify-client-\(UUID()).sqlite")

    func open() throws -> SQLiteStore { try SQLiteStore(path: url.path) }

    /// Removes the database and its WAL files.
    func remove() {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
    }
}

/// A test store that wraps an `InMemoryStore` and changes only some of its calls (commits, most
/// often): every read and `erase` go to `inner`.
protocol InMemoryWrapper: LocalStore {
    var inner: InMemoryStore { get }
}

extension InMemoryWrapper {
    func metadata() throws -> StoreMetadata { try inner.metadata() }
    func category(id: UUID) throws -> Category? { try inner.category(id: id) }
    func location(id: UUID) throws -> Location? { try inner.location(id: id) }
    func categories() throws -> [Category] { try inner.categories() }
    func locations(_ query: LocalQuery) throws -> [Location] { try inner.locations(query) }
    func locationIDs(inCategory id: UUID) throws -> [UUID] { try inner.locationIDs(inCategory: id) }
    func outbox() throws -> [OutboxEntry] { try inner.outbox() }
    func refusedChanges() throws -> [RefusedChange] { try inner.refusedChanges() }
    func erase() throws { try inner.erase() }
}
