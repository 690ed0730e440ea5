import Foundation
import Postgres
import Primitives

/// Categories: listing, reads, last-write-wins writes and deletes with reassign or cascade
/// (openapi.yaml). Every write is one transaction under the user's write lock.
public struct CategoryService: Sendable {
    let pool: ConnectionPool
    let storage: StorageScope
    let now: @Sendable () -> Timestamp

    /// One page of the caller's live categories, by name.
    public func list(_ caller: Caller, _ page: PageRequest) throws -> Page<Category> {
        try pool.withConnection { connection in
            try AccountGate.read(connection, caller, CategoryStore.listQuery(userID: caller.userID, page: page), now: now) { rows in
                var records: [Category] = []
                records.reserveCapacity(rows.count)
                for row in rows where !row.isNull(2) {
                    records.append(try Category(row: row, at: 2))
                }
                let total: Int64 = try rows.first?.decode(1) ?? 0
                return Page(records: records, totalCount: total, page: page.page, size: page.size)
            }
        }
    }

    /// The caller's live category `id`; `notFound` otherwise.
    public func get(_ caller: Caller, id: UUID) throws -> Category {
        let found = try pool.withConnection { connection in
            try AccountGate.read(connection, caller, CategoryStore.getQuery(userID: caller.userID, id: id), now: now) { rows in
                try rows.first.flatMap { row throws(PostgresError) in row.isNull(1) ? nil : try Category(row: row, at: 1) }
            }
        }
        guard let found else { throw LocifyError.notFound("category") }
        return found
    }

    /// POST: creates the category, or upserts it under last-write-wins when the id exists.
    public func create(_ caller: Caller, _ draft: CategoryDraft) throws -> WriteOutcome<Category> {
        try write(caller, draft, .create)
    }

    /// PUT: replaces an existing category (or revives its tombstone when newer); unknown id E007.
    public func replace(_ caller: Caller, _ draft: CategoryDraft) throws -> WriteOutcome<Category> {
        try write(caller, draft, .replace)
    }

    private func write(_ caller: Caller, _ draft: CategoryDraft, _ intent: LastWriteWins.Intent) throws -> WriteOutcome<Category> {
        if intent == .create, let created = try createFast(caller, draft) { return .created(created) }
        return try pool.withTransaction { connection in
            let stamp = try AccountGate.beginWrite(connection, caller, now: now)
            let stored = try CategoryStore.find(connection, userID: caller.userID, id: draft.id)
            let now = self.now()
            let decision = LastWriteWins.decide(
                intent, stored: stored?.clock, requested: draft.updatedAt,
                sameContent: stored.map(draft.hasSameContent) ?? false, now: now)
            return try decision.applyWrite(
                stored: stored, kind: "category", conflict: \.state,
                insert: { at in
                    try CategoryStore.insert(
                        connection, userID: caller.userID, draft, at: at, createdAt: min(draft.createdAt ?? at, now), stamp: stamp)
                },
                overwrite: { at in try CategoryStore.overwrite(connection, userID: caller.userID, draft, at: at, stamp: stamp) })
        }
    }

    /// The common case of a create, a new id, in one statement (see `CategoryStore.insertIfNew`);
    /// nil sends the write down the general path, which tells every other case apart.
    private func createFast(_ caller: Caller, _ draft: CategoryDraft) throws -> Category? {
        let now = self.now()
        guard case .insert(let at) = LastWriteWins.decide(.create, stored: nil, requested: draft.updatedAt, sameContent: false, now: now)
        else { return nil }
        return try pool.withConnection { connection in
            try CategoryStore.insertIfNew(connection, caller, draft, at: at, createdAt: min(draft.createdAt ?? at, now))
        }
    }

    /// DELETE: tombstones the category. With `reassignTo`, its live locations move to that
    /// category and the category's Storage folder is queued for deletion; without it, its live
    /// locations are tombstoned too and their folders and owned objects are queued as well.
    /// Returns the tombstone.
    public func delete(_ caller: Caller, id: UUID, updatedAt: Timestamp?, reassignTo: UUID?) throws -> Category {
        do {
            return try deleteInTransaction(caller, id: id, updatedAt: updatedAt, reassignTo: reassignTo)
        } catch {
            throw CategoryGuard.mapping(error)
        }
    }

    private func deleteInTransaction(_ caller: Caller, id: UUID, updatedAt: Timestamp?, reassignTo: UUID?) throws -> Category {
        try pool.withTransaction { connection in
            let stamp = try AccountGate.beginWrite(connection, caller, now: now)
            // Checked after the gate: a revoked token is 401 before a bad request is 400.
            if reassignTo == id {
                throw LocifyError.invalid("reassign_category_id", "must not be the category being deleted")
            }
            let stored = try CategoryStore.find(connection, userID: caller.userID, id: id)
            let decision = LastWriteWins.decide(
                .delete, stored: stored?.clock, requested: updatedAt, sameContent: false, now: now())
            return try decision.applyDelete(stored: stored, kind: "category", conflict: \.state) { at in
                if let stored {
                    try removeContents(connection, caller.userID, category: stored, reassignTo: reassignTo, at: at, stamp: stamp)
                }
                return try CategoryStore.tombstone(connection, userID: caller.userID, id: id, at: at, stamp: stamp)
            }
        }
    }

    private func removeContents(
        _ connection: PostgresConnection, _ userID: String, category: Category, reassignTo: UUID?, at: Timestamp,
        stamp: Int64
    ) throws {
        var jobs = CleanupJob.categoryFolders(userID: userID, id: category.id)
        if let target = reassignTo {
            guard try CategoryStore.isLive(connection, userID: userID, id: target) else {
                throw LocifyError.notFound("category")
            }
            try LocationStore.moveAll(connection, userID: userID, from: category.id, to: target, at: at, stamp: stamp)
        } else {
            let removed = try LocationStore.tombstoneAll(connection, userID: userID, in: category.id, at: at, stamp: stamp)
            var urls = category.icon.map { [$0] } ?? []
            for location in removed {
                jobs += CleanupJob.locationFolders(userID: userID, id: location.id)
                urls += location.imageURLs
            }
            // Objects inside a folder queued above go with it.
            let folders = jobs.map(\.target)
            jobs += storage.ownedObjects(urls, userID: userID)
                .filter { path in !folders.contains { path.hasPrefix($0) } }
                .map { CleanupJob(kind: .storageObject, target: $0) }
        }
        if CleanupJob.isFolderSafe(userID: userID) {
            try CleanupJobStore.enqueue(connection, userID: userID, jobs)
        }
    }
}

extension Category {
    /// The last-write-wins clock of the stored record.
    var clock: LastWriteWins.Stored { .init(updatedAt: updatedAt, isDeleted: deletedAt != nil) }
}
