import FoundationEssentials
import LocifyRules
import Postgres
import Primitives

/// Categories: listing, reads, last-write-wins writes and deletes with reassign or cascade
/// (openapi.yaml). Every write is one transaction under the user's write lock.
public struct CategoryService: Sendable {
    let pool: ConnectionPool
    let storage: StorageScope
    let now: @Sendable () -> Timestamp

    /// The reads and writes categories share with locations.
    private var records: RecordService<CategoryStore> { RecordService(pool: pool, now: now) }

    /// One page of the caller's live categories, by name.
    public func list(_ caller: Caller, _ page: PageRequest) throws -> Page<Category> {
        try pool.withConnection { connection in
            try AccountGate.read(connection, caller, CategoryStore.listQuery(userID: caller.userID, page: page), now: now) { rows in
                try Page(rows: rows, recordsAt: 2, request: page)
            }
        }
    }

    /// The caller's live category `id`; `notFound` otherwise.
    public func get(_ caller: Caller, id: UUID) throws -> Category {
        try records.get(caller, id: id)
    }

    /// POST: creates the category, or upserts it under last-write-wins when the id exists.
    public func create(_ caller: Caller, _ draft: CategoryDraft) throws -> WriteOutcome<Category> {
        try records.write(caller, draft, .create)
    }

    /// PUT: replaces an existing category (or revives its tombstone when newer); unknown id E007.
    public func replace(_ caller: Caller, _ draft: CategoryDraft) throws -> WriteOutcome<Category> {
        try records.write(caller, draft, .replace)
    }

    /// DELETE: tombstones the category. With `reassignTo`, its live locations move to that
    /// category and the category's Storage folder is queued for deletion; without it, its live
    /// locations are tombstoned too and their folders and owned objects are queued as well.
    /// Returns the tombstone.
    public func delete(_ caller: Caller, id: UUID, updatedAt: Timestamp?, reassignTo: UUID?) throws -> Category {
        try records.delete(
            caller, id: id, updatedAt: updatedAt,
            check: {
                guard let reassignTo else { return }
                try LocifyError.applying(
                    { (target) throws(RuleViolation) in try CategoryRules.checkReassignTarget(target, deleting: id) }, to: reassignTo)
            },
            beforeTombstone: { connection, stored, at, stamp in
                try removeContents(connection, caller.userID, category: stored, reassignTo: reassignTo, at: at, stamp: stamp)
            })
    }

    private func removeContents(
        _ connection: PostgresConnection, _ userID: String, category: Category, reassignTo: UUID?, at: Timestamp,
        stamp: Int64
    ) throws {
        var jobs = CleanupJob.categoryFolders(userID: userID, id: category.id)
        if let target = reassignTo {
            try LocifyError.applying(CategoryRules.checkReassignTarget(isLive:), to: CategoryStore.isLive(connection, userID: userID, id: target))
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
