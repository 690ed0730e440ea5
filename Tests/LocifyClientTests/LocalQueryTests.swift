import Foundation
import GRDB
import LocifyClient
import LocifyRules
import Testing
import TestSupport
import TestSupportServer

/// Issue 26 item 2: the offline queries of both stores list what the server's `GET /v1/locations`
/// and `GET /v1/categories` list for the same parameters, in the same order, page for page; and
/// their live forms send a new result after local edits and pulled changes.
@Suite("LocifyClient offline queries: the server's listings, offline and live")
struct LocalQueryTests {
    /// The characters names and texts are made of: letters in both cases, accents precomposed
    /// and decomposed, letters whose case mapping changes their length, LIKE's wildcards and
    /// escape, spaces, and characters beyond the BMP.
    static let alphabet: [String] = [
        "a", "A", "b", "B", "e", "é", "É", "e\u{301}", "E\u{301}", "ß", "ẞ", "İ", "i", "I", "ı", "%", "_", "\\", " ", "z", "Z", "Σ",
        "ς", "σ", "ǅ", "😀", "Å", "Å", "0", "'",
    ]

    static func text(_ random: inout SeededGenerator, length: ClosedRange<Int>) -> String {
        (0..<Int.random(in: length, using: &random)).map { _ in alphabet.randomElement(using: &random) ?? "a" }.joined()
    }

    /// A valid name: 1-8 characters, no space at either end.
    static func name(_ random: inout SeededGenerator, reusing previous: [String]) -> String {
        if let earlier = previous.randomElement(using: &random), Bool.random(using: &random), Int.random(in: 0..<3, using: &random) == 0 {
            // The same name in another case: ties on the name key, settled by id.
            return Bool.random(using: &random) ? earlier.uppercased() : earlier.lowercased()
        }
        let trimmed = text(&random, length: 1...8).trimmingCharacters(in: .whitespaces)
        return trimmed.isEmpty ? "x" : trimmed
    }

    static func longText(_ random: inout SeededGenerator) -> String? {
        switch Int.random(in: 0..<5, using: &random) {
        case 0: return nil
        case 1: return ""
        case 2: return "   "
        default: return text(&random, length: 1...20)
        }
    }

    /// One user's data on the server, made at random from `seed`; returns the category ids and
    /// the texts searched for.
    static func populate(_ api: LocifyAPIClient, seed: UInt64) async throws -> (categories: [UUID], terms: [String?]) {
        var random = SeededGenerator(seed: seed)
        var names: [String] = []
        for _ in 0..<3 {
            let name = name(&random, reusing: names)
            names.append(name)
            _ = try await api.createCategory(CategoryWrite(id: UUID(), name: name))
        }
        let categories = try await api.allCategories().map(\.id)
        // Few distinct instants: ties on created_at and updated_at, settled by id.
        let base = Date().addingTimeInterval(-86_400).locifyMilliseconds
        var searchable: [String] = []
        var made: [UUID] = []
        for _ in 0..<70 {
            let name = name(&random, reusing: names)
            names.append(name)
            let address = longText(&random), description = longText(&random)
            searchable += [name, address, description].compactMap { $0 }
            let created = base + Int64.random(in: 0..<6, using: &random) * 1000
            let location = try await api.createLocation(
                LocationWrite(
                    id: UUID(), categoryID: categories.randomElement(using: &random) ?? categories[0], name: name,
                    address: address, description: description, latitude: 1, longitude: 2, isFavorite: Bool.random(using: &random),
                    createdAt: Date(locifyMilliseconds: created),
                    updatedAt: Date(locifyMilliseconds: created + Int64.random(in: 0..<3, using: &random) * 1000)))
            made.append(location.id)
        }
        for id in made.shuffled(using: &random).prefix(5) { try await api.deleteLocation(id: id) }
        var terms: [String?] = [nil, "", " ", "%", "_", "\\", "e", "é", "e\u{301}", "ss", "%_", "a%", "i̇", "σ", "😀"]
        for _ in 0..<12 {
            guard let source = searchable.randomElement(using: &random), !source.isEmpty else { continue }
            let scalars = Array(source.unicodeScalars)
            let start = Int.random(in: 0..<scalars.count, using: &random)
            let end = Int.random(in: start...min(scalars.count, start + 4), using: &random)
            var term = String(String.UnicodeScalarView(scalars[start..<end]))
            if Bool.random(using: &random) { term = term.uppercased() }
            terms.append(term)
        }
        return (categories, terms)
    }

    enum StoreKind: String, CaseIterable, Sendable {
        case memory, sqlite
    }

    static func makeStore(_ kind: StoreKind, _ file: TemporaryStoreFile) throws -> any LocalStore {
        switch kind {
        case .memory: return InMemoryStore()
        case .sqlite: return try file.open()
        }
    }

    @Test(
        "after a sync, every offline query lists the server's records in the server's order, page for page",
        arguments: [1, 2, 3, 4] as [UInt64])
    func sameAsServer(seed: UInt64) async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let api = harness.api()
        let (categories, terms) = try await Self.populate(api, seed: seed)
        let file = TemporaryStoreFile()
        defer { file.remove() }
        var engines: [(StoreKind, SyncEngine)] = []
        for kind in StoreKind.allCases {
            let engine = SyncEngine(api: harness.api(), store: try Self.makeStore(kind, file))
            try await engine.sync()
            engines.append((kind, engine))
        }

        let serverCategories = try await api.allCategories()
        for (kind, engine) in engines {
            let local = try await engine.categories()
            #expect(local.map(\.id) == serverCategories.map(\.id), "seed \(seed), \(kind): categories in the server's order")
            #expect(local.map(\.locationCount) == serverCategories.map(\.locationCount), "seed \(seed), \(kind): counts")
        }

        var random = SeededGenerator(seed: seed &+ 1000)
        let sorts: [LocifyAPIClient.LocationQuery.Sort] = [.createdAt, .updatedAt, .name]
        for round in 0..<45 {
            let categoryID: UUID? = [nil, nil, categories.randomElement(using: &random), UUID()].randomElement(using: &random) ?? nil
            let isFavorite: Bool? = [nil, true, false].randomElement(using: &random) ?? nil
            let search = terms.randomElement(using: &random) ?? nil
            let sort = sorts[round % sorts.count]
            let remote = LocifyAPIClient.LocationQuery(categoryID: categoryID, isFavorite: isFavorite, search: search, sort: sort)
            let query = LocalQuery(categoryID: categoryID, isFavorite: isFavorite, search: search, sort: sort, limit: nil)
            let all = try await api.allLocations(remote)
            let size = Int.random(in: 1...25, using: &random)
            let page = Int.random(in: 1...(all.count / size + 2), using: &random)
            let serverPage = try await api.listLocations(remote, page: page, size: size)
            let context = "seed \(seed), round \(round): \(query), page \(page) of \(size)"
            for (kind, engine) in engines {
                let local = try await engine.locations(query)
                if local.map(\.id) != all.map(\.id) {
                    Issue.record(
                        "\(kind) lists \(local.map(\.name)) where the server lists \(all.map(\.name)); \(context)")
                }
                let localPage = try await engine.locations(query.page(page, size: size))
                #expect(localPage.map(\.id) == serverPage.data.map(\.id), "\(kind), \(context)")
                #expect(try await engine.locationCount(query.page(page, size: size)) == serverPage.meta.totalCount, "\(kind), \(context)")
            }
        }
    }

    @Test("the engine refuses the search the server refuses, with E001 on q")
    func refusedSearch() async throws {
        let engine = SyncEngine(api: LocifyAPIClient(baseURL: URL(fileURLWithPath: "/"), token: { _ in "" }), store: InMemoryStore())
        for search in ["a\u{7}b", String(repeating: "é", count: 256)] {
            await #expect(throws: LocifyError.self) { try await engine.locations(LocalQuery(search: search)) }
            var iterator = engine.observeLocations(LocalQuery(search: search)).makeAsyncIterator()
            await #expect(throws: LocifyError.self) { _ = try await iterator.next() }
        }
        #expect(try await engine.locations(LocalQuery(search: String(repeating: "é", count: 255))).isEmpty)
    }

    /// Reads values of a live query until one satisfies `done`.
    static func next<Value>(
        _ iterator: inout LiveQuery<Value>.AsyncIterator, until done: (Value) -> Bool
    ) async throws -> Value {
        while let value = try await iterator.next() {
            if done(value) { return value }
        }
        throw LocifyError.cancelled
    }

    @Test(
        "a live query sends the new result after a local edit and after a pulled change, and stops with its consumer",
        arguments: StoreKind.allCases)
    func liveQuery(kind: StoreKind) async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let harness = ClientHarness(server)
        let file = TemporaryStoreFile()
        defer { file.remove() }
        let store = try Self.makeStore(kind, file)
        let engine = SyncEngine(api: harness.api(), store: store)
        try await engine.sync()
        let category = try #require(try await engine.categories().first)

        var teas = engine.observeLocations(LocalQuery(search: "TEA", sort: .name)).makeAsyncIterator()
        var counts = engine.observeCategories().makeAsyncIterator()
        #expect(try await teas.next() == [])
        #expect(try await counts.next()?.first { $0.id == category.id }?.locationCount == 0)

        // A local edit, before any sync.
        let house = try await engine.saveLocation(LocationDraft(categoryID: category.id, name: "Tea house", latitude: 1, longitude: 2))
        #expect(try await teas.next()?.map(\.id) == [house.id])
        #expect(try await Self.next(&counts) { $0.first { $0.id == category.id }?.locationCount == 1 }.isEmpty == false)

        // A change made elsewhere, pulled.
        let green = try await harness.api().createLocation(
            LocationWrite(id: UUID(), categoryID: category.id, name: "green tea", description: "matcha", latitude: 1, longitude: 2))
        try await engine.sync()
        let both = try await Self.next(&teas) { $0.count == 2 }
        #expect(both.map(\.id) == [green.id, house.id], "the server's name order: \"green tea\" before \"tea house\"")

        // A delete pulled from elsewhere, then a local rename out of the search.
        try await harness.api().deleteLocation(id: green.id)
        try await engine.sync()
        #expect(try await Self.next(&teas) { $0.count == 1 }.map(\.id) == [house.id])
        var renamed = LocationDraft(house)
        renamed.name = "Coffee house"
        try await engine.saveLocation(renamed)
        #expect(try await Self.next(&teas) { $0.isEmpty }.isEmpty)

        // The consumer stops: the observation ends with it.
        let consumer = Task {
            var values = 0
            for try await _ in engine.observeLocationCount() { values += 1 }
            return values
        }
        if let memory = store as? InMemoryStore {
            while memory.observerCount < 3 { await Task.yield() }
            consumer.cancel()
            _ = try await consumer.value
            #expect(memory.observerCount == 2, "the cancelled query no longer observes the store")
        } else {
            consumer.cancel()
            _ = try await consumer.value
        }
    }

    @Test("a store written before the listing keys gets them when opened: its rows are searched and ordered by name")
    func migratesOldStore() throws {
        let file = TemporaryStoreFile()
        defer { file.remove() }
        do {
            var changes = LocalChanges()
            changes.upsertedLocations = ["b", "É", "a"].map { name in
                Location(
                    id: UUID(), categoryID: UUID(), name: name, address: "Rue \(name)", latitude: 1, longitude: 2, createdAt: Date(),
                    updatedAt: Date())
            }
            try file.open().commit(changes)
        }
        // Back to schema v1: no keys, the v1 indexes, the migration not applied.
        let queue = try DatabaseQueue(path: file.url.path)
        try queue.write { db in
            try db.execute(
                sql: """
                    DROP INDEX location_by_name; DROP INDEX location_by_created; DROP INDEX location_by_updated;
                    DROP INDEX location_by_category; DROP INDEX location_by_category_created;
                    CREATE INDEX location_by_category ON location (category_id);
                    ALTER TABLE location DROP COLUMN name_key; ALTER TABLE location DROP COLUMN search_text;
                    CREATE INDEX location_by_created ON location (created_at DESC, id DESC);
                    CREATE INDEX location_by_updated ON location (updated_at DESC, id DESC);
                    DELETE FROM grdb_migrations WHERE identifier = 'v2 listing keys';
                    """)
        }
        try queue.close()
        let store = try file.open()
        #expect(try store.locations(LocalQuery(sort: .name)).map(\.name) == ["a", "b", "É"])
        #expect(try store.locations(LocalQuery(search: "RUE É")).map(\.name) == ["É"])
    }
}
