import Foundation
import Locify
import LocifyRules
import Primitives
import Testing
import TestSupport

/// What one write of the concurrency test did.
enum WriteResult: Sendable, Equatable {
    case created, updated, unchanged, conflict(newerThanRequest: Bool)
}

@Suite("Concurrent writes to one record (openapi.yaml): last write wins, decided atomically")
struct ConcurrencyTests {
    static let threads = 6
    static let writesPerThread = 15
    static let base = Timestamp(milliseconds: 1_740_830_400_000)  // 2025-03-01T12:00:00Z

    /// Client times base + 1 s ... base + n s, shuffled and dealt to the threads.
    static func dealtTimes(seed: UInt64) -> [[Int64]] {
        var generator = SeededGenerator(seed: seed)
        let all = Array(1...Int64(threads * writesPerThread)).shuffled(using: &generator)
        return (0..<threads).map { thread in Array(all[(thread * writesPerThread)..<((thread + 1) * writesPerThread)]) }
    }

    @Test("conflicting location writes from several threads: the newest updated_at wins and version is 1 + accepted overwrites", arguments: [UInt64(1), 2, 3])
    func conflictingLocationWrites(seed: UInt64) throws {
        let db = try LocifyTestDatabase.create(poolSize: Self.threads)
        defer { db.drop() }
        let caller = TestConstants.newCaller()
        let categories = [UUID(), UUID()]
        for category in categories { _ = try db.services.categories.create(caller, CategoryDraft(id: category, name: "C")) }
        let id = UUID()
        @Sendable func draft(_ second: Int64) throws -> LocationDraft {
            try LocationDraft(
                id: id, categoryID: categories[Int(second % 2)], name: "write \(second)", latitude: Double(second) / 10,
                longitude: 0, isFavorite: second % 3 == 0, updatedAt: Self.base.adding(milliseconds: second * 1000))
        }
        guard case .created = try db.services.locations.create(caller, draft(0)) else {
            Issue.record("the first write should create")
            return
        }
        let results = Locked<[(Int64, WriteResult)]>([])
        let dealt = Self.dealtTimes(seed: seed)
        try runOnThreads(Self.threads) { thread in
            for (index, second) in dealt[thread].enumerated() {
                let write = try draft(second)
                let result: WriteResult
                do {
                    // Alternate the two write forms: POST (upsert) and PUT (replace).
                    let outcome = index % 2 == 0 ? try db.services.locations.create(caller, write) : try db.services.locations.replace(caller, write)
                    switch outcome {
                    case .created: result = .created
                    case .updated: result = .updated
                    case .unchanged: result = .unchanged
                    }
                } catch LocifyError.conflict(.location(let stored)) {
                    result = .conflict(newerThanRequest: stored.updatedAt > write.updatedAt ?? .epoch)
                }
                results.withLock { $0.append((second, result)) }
            }
        }
        let all = results.withLock { $0 }
        #expect(all.count == Self.threads * Self.writesPerThread)
        let accepted = all.filter { $0.1 == .updated }.count
        #expect(all.allSatisfy { $0.1 == .updated || $0.1 == .conflict(newerThanRequest: true) }, "only overwrites and honest conflicts")
        #expect(accepted < all.count, "the shuffled times must make some writes lose")
        let newest = try #require(all.map(\.0).max())
        #expect(all.contains { $0.0 == newest && $0.1 == .updated }, "the newest write is always accepted")
        let final = try db.services.locations.get(caller, id: id)
        #expect(final == Location(
            id: id, categoryID: categories[Int(newest % 2)], name: "write \(newest)", address: nil, description: nil,
            latitude: Double(newest) / 10, longitude: 0, isFavorite: newest % 3 == 0, imageURLs: [], version: 1 + Int64(accepted),
            createdAt: Self.base, updatedAt: Self.base.adding(milliseconds: newest * 1000), deletedAt: nil))
        // The maintained counters follow the winner.
        for (index, category) in categories.enumerated() {
            #expect(try db.services.categories.get(caller, id: category).locationCount == (Int(newest % 2) == index ? 1 : 0))
        }
    }

    @Test("conflicting category writes from several threads: the newest updated_at wins and version is 1 + accepted overwrites")
    func conflictingCategoryWrites() throws {
        let db = try LocifyTestDatabase.create(poolSize: Self.threads)
        defer { db.drop() }
        let caller = TestConstants.newCaller()
        let id = DefaultCategories.all[0].id  // provisioned at the epoch: every write below is newer
        let updated = Locked(0)
        let dealt = Self.dealtTimes(seed: 42)
        try runOnThreads(Self.threads) { thread in
            for (index, second) in dealt[thread].enumerated() {
                let draft = try CategoryDraft(
                    id: id, name: "name \(second)", icon: "https://example.com/\(second).png",
                    updatedAt: Self.base.adding(milliseconds: second * 1000))
                do {
                    let outcome = index % 2 == 0 ? try db.services.categories.replace(caller, draft) : try db.services.categories.create(caller, draft)
                    guard case .updated = outcome else {
                        Issue.record("unexpected outcome \(outcome)")
                        continue
                    }
                    updated.withLock { $0 += 1 }
                } catch LocifyError.conflict(.category(let stored)) {
                    #expect(stored.updatedAt > draft.updatedAt ?? .epoch)
                }
            }
        }
        let newest = Int64(Self.threads * Self.writesPerThread)
        let final = try db.services.categories.get(caller, id: id)
        #expect(final.name == "name \(newest)" && final.icon == "https://example.com/\(newest).png")
        #expect(final.updatedAt == Self.base.adding(milliseconds: newest * 1000) && final.createdAt == .epoch)
        #expect(final.version == 1 + Int64(updated.withLock { $0 }))
    }

    @Test("concurrent creates of the same id, for a brand-new user: exactly one is created; identical replays are unchanged", arguments: ["location", "category"])
    func concurrentCreates(kind: String) throws {
        let db = try LocifyTestDatabase.create(poolSize: Self.threads)
        defer { db.drop() }
        for round in 0..<5 {
            // A new user each round, so provisioning races too.
            let caller = TestConstants.newCaller()
            let id = UUID()
            let at = Self.base.adding(milliseconds: Int64(round))
            let outcomes = Locked<[String]>([])
            try runOnThreads(Self.threads) { _ in
                let outcome: String
                if kind == "location" {
                    let draft = try LocationDraft(
                        id: id, categoryID: DefaultCategories.all[1].id, name: "Same", latitude: 1, longitude: 2, updatedAt: at)
                    switch try db.services.locations.create(caller, draft) {
                    case .created(let record): outcome = "created \(record.version)"
                    case .updated(let record): outcome = "updated \(record.version)"
                    case .unchanged(let record): outcome = "unchanged \(record.version)"
                    }
                } else {
                    switch try db.services.categories.create(caller, CategoryDraft(id: id, name: "Same", updatedAt: at)) {
                    case .created(let record): outcome = "created \(record.version)"
                    case .updated(let record): outcome = "updated \(record.version)"
                    case .unchanged(let record): outcome = "unchanged \(record.version)"
                    }
                }
                outcomes.withLock { $0.append(outcome) }
            }
            let all = outcomes.withLock { $0 }.sorted()
            #expect(all == ["created 1"] + Array(repeating: "unchanged 1", count: Self.threads - 1), "round \(round)")
            let categories = try db.services.categories.list(caller, PageRequest())
            #expect(categories.totalCount == (kind == "category" ? 5 : 4), "the defaults were provisioned once")
        }
    }

    @Test("concurrent unstamped creates of the same id with different content: one 201, the rest overwrite in turn")
    func concurrentUnstampedCreates() throws {
        let db = try LocifyTestDatabase.create(poolSize: Self.threads)
        defer { db.drop() }
        let caller = TestConstants.newCaller()
        let id = UUID()
        let outcomes = Locked<[WriteOutcome<Location>]>([])
        try runOnThreads(Self.threads) { thread in
            let draft = try LocationDraft(id: id, categoryID: DefaultCategories.all[0].id, name: "thread \(thread)", latitude: 0, longitude: 0)
            let outcome = try db.services.locations.create(caller, draft)
            outcomes.withLock { $0.append(outcome) }
        }
        let all = outcomes.withLock { $0 }
        #expect(all.filter { if case .created = $0 { true } else { false } }.count == 1)
        #expect(all.filter { if case .updated = $0 { true } else { false } }.count == Self.threads - 1)
        // Each accepted write got its own version and a strictly later time than the one before.
        let byVersion = all.map(\.record).sorted { $0.version < $1.version }
        #expect(byVersion.map(\.version) == (1...Int64(Self.threads)).map { $0 })
        #expect(zip(byVersion, byVersion.dropFirst()).allSatisfy { $0.updatedAt < $1.updatedAt })
        let final = try db.services.locations.get(caller, id: id)
        #expect(final == byVersion.last)
    }
}
