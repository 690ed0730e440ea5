import FoundationEssentials
import LocifyRules
import Postgres
import Primitives

/// Categories: listing, reads, field-level last-write-wins writes and deletes with reassign or cascade
/// (openapi.yaml). Every write is one transaction under the user's write lock.
public struct CategoryService: Sendable {
    let accounts: Accounts
    let storage: StorageScope

    /// The reads and writes categories share with locations.
    private var records: RecordService<CategoryStore> { RecordService(accounts: accounts) }

    /// One page of the caller's live categories, by name.
    public func list(_ caller: Caller, _ page: PageRequest) throws -> Page<Category> {
        Page(rows: try accounts.read(caller, CategoryStore.listQuery(caller, page: page)), request: page)
    }

    /// The caller's live category `id`; `notFound` otherwise.
    public func get(_ caller: Caller, id: UUID) throws -> Category {
        try records.get(caller, id: id)
    }

    /// POST: creates the category, or upserts it under last-write-wins when the id exists.
    public func create(_ caller: Caller, _ draft: CategoryDraft) throws -> WriteOutcome<Category> {
        try records.write(caller, draft, creating: true, aroundUpdate: comeBack(caller))
    }

    /// PUT: replaces an existing category (or revives its tombstone when newer); unknown id E007.
    public func replace(_ caller: Caller, _ draft: CategoryDraft) throws -> WriteOutcome<Category> {
        try records.write(caller, draft, creating: false, aroundUpdate: comeBack(caller))
    }

    /// PATCH: writes the fields the patch carries, each where it is newer than the stored one's
    /// (or revives the tombstone when newer); unknown id E007.
    public func patch(_ caller: Caller, _ patch: CategoryPatch) throws -> WriteOutcome<Category> {
        try records.patch(caller, patch, aroundUpdate: comeBack(caller))
    }

    /// A category a newer write brings back (an update of its tombstone is one that does) brings
    /// back the locations placed in it, and those of the deleted categories reassigned to it
    /// (openapi.yaml, "Writes in any order"): those a pending cascade still shows are hidden first,
    /// while the tombstone still says where they are shown (`PendingCascades.settle`), so all come
    /// back from the tombstones a settled cascade leaves.
    private func comeBack(_ caller: Caller) -> RecordService<CategoryStore>.AroundUpdate {
        { transaction, stored, update in
            guard stored.deletedAt != nil else { return try update() }
            let (connection, userID) = (transaction.connection, caller.userID)
            try accounts.cascades.settle(connection, userID: userID, aheadOfMoving: stored.id)
            let written = try update()
            _ = try LocationStore.follow(connection, userID: userID, category: written.id, stamp: transaction.stamp)
            return written
        }
    }

    /// DELETE: tombstones the category (a newer delete of a tombstone moves it, with its options).
    /// With `reassignTo`, the locations placed in it are shown in that category (followed while it
    /// is deleted in turn) and the category's Storage folder is queued for deletion; without it,
    /// they are shown deleted, and their folders and owned objects are queued as well. A reassign
    /// to the category itself is refused (E001), once the gate passed. Returns the tombstone.
    public func delete(_ caller: Caller, id: UUID, updatedAt: Timestamp?, reassignTo: UUID?) throws -> Category {
        try records.delete(
            caller, id: id, updatedAt: updatedAt, check: { try Self.checkDeletion(id: id, reassignTo: reassignTo) },
            afterTombstone: { transaction, stored, _ in
                try removeContents(
                    transaction.connection, caller.userID, category: stored, reassignTo: reassignTo, stamp: transaction.stamp)
            })
    }

    /// Refuses a delete that reassigns the category's locations to the category itself (E001).
    static func checkDeletion(id: UUID, reassignTo: UUID?) throws(LocifyError) {
        guard let reassignTo else { return }
        try LocifyError.applying(
            { (target) throws(RuleViolation) in try CategoryRules.checkReassignTarget(target, deleting: id) }, to: reassignTo)
    }

    private func removeContents(
        _ connection: PostgresConnection, _ userID: String, category: Category, reassignTo: UUID?, stamp: Int64
    ) throws {
        if let target = reassignTo {
            try LocifyError.applying(CategoryRules.checkReassignTarget(isKnown:), to: CategoryStore.isKnown(connection, userID: userID, id: target))
            // Its locations a pending cascade still shows are moved from the tombstones a settled
            // cascade leaves; deleted again with a cascade, they stay deleted as they are.
            try accounts.cascades.settle(connection, userID: userID, aheadOfMoving: category.id)
        }
        try CategoryStore.setReassignTarget(connection, userID: userID, id: category.id, target: reassignTo)
        let hidden: [HiddenLocation]
        if reassignTo == nil && category.deletedAt == nil {
            // A cascade of a live category hides the locations shown in it after answering, batch
            // by batch, each batch queuing the clean-up of what it hid (PendingCascades): nothing
            // here grows with the category.
            if try LocationStore.anyShown(connection, userID: userID, in: category.id) {
                try PendingCascades.record(connection, userID: userID, category: category.id, stamp: stamp)
            }
            hidden = []
        } else {
            hidden = try LocationStore.follow(connection, userID: userID, category: category.id, stamp: stamp)
        }
        // A category deleted again has had its folder queued already.
        try storage.queueCleanup(
            connection, userID: userID, folders: category.deletedAt == nil ? CleanupJob.categoryFolders(userID: userID, id: category.id) : [],
            urls: reassignTo == nil ? category.icon.map { [$0] } ?? [] : [], locations: hidden)
    }
}
