import Foundation
import LocifyRules

/// A local change waiting for the server, stamped with the device time the user made it.
public struct OutboxEntry: Codable, Sendable, Hashable, Identifiable {
    /// Increasing: the order the changes were made. A later edit folded into a pending change
    /// keeps the pending change's place (so a category's create never moves behind its places).
    public var id: Int64
    /// The change to push, as the server will receive it.
    public var change: PushChange
    /// Whether the change was ever sent: the server may have applied it even though no answer
    /// came back (it must then be sent again, never dropped).
    public var attempted: Bool

    /// Entry `id` for `change`, not yet sent.
    public init(id: Int64, change: PushChange, attempted: Bool = false) {
        self.id = id
        self.change = change
        self.attempted = attempted
    }

    /// The record the change is about.
    var key: RecordKey { RecordKey(kind: change.kind, id: change.recordID) }

    /// For a category delete, where its locations go (nil: deleted with it).
    var reassignTarget: UUID? {
        if case .deleteCategory(let write) = change { return write.reassignCategoryID }
        return nil
    }

    var isCategoryDelete: Bool {
        if case .deleteCategory = change { return true }
        return false
    }

    /// For a location create, update or patch of its category, the category it puts the location in.
    var locationCategory: UUID? {
        switch change {
        case .createLocation(let write), .updateLocation(let write): return write.categoryID
        case .patchLocation(let patch) where patch.fields.contains(.categoryID): return patch.values.categoryID
        default: return nil
        }
    }
}

/// A record's identity across kinds.
struct RecordKey: Hashable, Sendable {
    var kind: RecordKind
    var id: UUID
}

/// The pending changes in the order the user made them, indexed by record, with the rules that
/// keep what depends on what: folding a new edit into a pending change, and cutting batches so
/// that the server (which applies category writes, then location changes, then category deletes)
/// never sees a change before one it depends on.
///
/// The dependencies, all that the server's rules create (openapi.yaml):
/// - a location write needs its category live: the category's pending create goes first (in an
///   earlier batch or the same one, where category writes are applied first);
/// - a category delete runs its cascade or reassign on what the server holds when it runs: every
///   change made before it goes first (an earlier batch or the same one, where category deletes
///   are applied last, in the order sent), and so does the target's create;
/// - a category written again after its delete (revived) must follow the delete in a later batch
///   (in one batch the server would apply the write first).
struct OutboxState: Sendable, Hashable {
    /// Every pending entry, by id (the order the changes were made).
    private(set) var entries: [Int64: OutboxEntry] = [:]
    /// The ids of each record's pending entries, in order.
    private(set) var byRecord: [RecordKey: [Int64]] = [:]
    /// The ids of pending category deletes, by the category deleted and by their reassign target.
    private(set) var categoryDeletes: [UUID: [Int64]] = [:]
    /// The id the next entry gets.
    private(set) var nextID: Int64 = 1
    /// Changes since the last `takeChanges()`: entries written and entries removed.
    private(set) var written: Set<Int64> = []
    private(set) var removed: Set<Int64> = []

    init(_ entries: [OutboxEntry] = [], nextID: Int64 = 1) {
        self.nextID = nextID
        for entry in entries.sorted(by: { $0.id < $1.id }) { put(entry) }
        written = []
        self.nextID = max(nextID, (entries.map(\.id).max() ?? 0) + 1)
    }

    var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }

    /// The entries in the order made.
    var ordered: [OutboxEntry] { entries.keys.sorted().compactMap { entries[$0] } }

    func entries(of key: RecordKey) -> [OutboxEntry] {
        (byRecord[key] ?? []).compactMap { entries[$0] }
    }

    func hasPending(_ key: RecordKey) -> Bool { !(byRecord[key] ?? []).isEmpty }

    /// The pending delete of category `id`, if any (the latest).
    func pendingDelete(ofCategory id: UUID) -> OutboxEntry? {
        entries(of: RecordKey(kind: .category, id: id)).last { $0.isCategoryDelete }
    }

    // MARK: Primitive edits

    mutating func put(_ entry: OutboxEntry) {
        if let old = entries[entry.id] { unindex(old) }
        entries[entry.id] = entry
        byRecord[entry.key, default: []].append(entry.id)
        byRecord[entry.key]?.sort()
        if entry.isCategoryDelete { categoryDeletes[entry.change.recordID, default: []].append(entry.id) }
        written.insert(entry.id)
        removed.remove(entry.id)
        nextID = max(nextID, entry.id + 1)
    }

    mutating func remove(_ id: Int64) {
        guard let entry = entries.removeValue(forKey: id) else { return }
        unindex(entry)
        written.remove(id)
        removed.insert(id)
    }

    private mutating func unindex(_ entry: OutboxEntry) {
        byRecord[entry.key]?.removeAll { $0 == entry.id }
        if byRecord[entry.key]?.isEmpty == true { byRecord[entry.key] = nil }
        if entry.isCategoryDelete {
            categoryDeletes[entry.change.recordID]?.removeAll { $0 == entry.id }
            if categoryDeletes[entry.change.recordID]?.isEmpty == true { categoryDeletes[entry.change.recordID] = nil }
        }
    }

    /// The entries written and removed since the last call, for the store.
    mutating func takeChanges() -> (written: [OutboxEntry], removed: [Int64]) {
        defer {
            written = []
            removed = []
        }
        return (written.sorted().compactMap { entries[$0] }, removed.sorted())
    }

    // MARK: Enqueueing

    /// Queues `change`, folded into the record's pending change when that keeps every dependency:
    /// - a create or update folds into the record's last pending write (not in flight, no delete
    ///   after it), which keeps its place, its `create` action and its `created_at`;
    /// - a patch folds into the record's last pending change when that is a create never sent
    ///   (no other device can have written the record since); otherwise its fields leave the
    ///   earlier pending patches not in flight (a patch left with none goes) and it is queued:
    ///   consecutive edits coalesce field by field, each field keeping the time of its last edit,
    ///   so an edit another device made meanwhile to a field a later patch does not carry is
    ///   never overwritten with a time the device's edit did not have;
    /// - a location delete replaces the record's pending writes, and of a record the server never
    ///   saw (`serverMayKnow` false, nothing ever sent) it removes them and queues nothing;
    /// - a category delete replaces the category's pending updates; its pending create goes too
    ///   when no pending change depends on the category (a location written into it, a delete
    ///   reassigning to it), and then, if the server never saw it, nothing is queued at all.
    mutating func enqueue(_ change: PushChange, serverMayKnow: Bool, inFlight: Set<Int64>) {
        let key = RecordKey(kind: change.kind, id: change.recordID)
        let pending = entries(of: key).filter { !inFlight.contains($0.id) }
        let mayKnow = serverMayKnow || entries(of: key).contains { $0.attempted || inFlight.contains($0.id) }
        switch change {
        case .patchCategory, .patchLocation:
            enqueue(patch: change, key: key, inFlight: inFlight)
        case .createCategory, .updateCategory, .createLocation, .updateLocation:
            if let last = entries(of: key).last, !inFlight.contains(last.id), !last.isDelete {
                put(OutboxEntry(id: last.id, change: last.change.folding(change), attempted: last.attempted))
            } else {
                append(change)
            }
        case .deleteLocation:
            for entry in pending { remove(entry.id) }
            if mayKnow { append(change) }
        case .deleteCategory:
            for entry in pending where entry.change.action == .update || entry.change.action == .patch { remove(entry.id) }
            let creates = entries(of: key).filter { $0.change.action == .create && !inFlight.contains($0.id) }
            if !creates.isEmpty && !hasDependents(ofCategory: change.recordID) {
                for entry in creates { remove(entry.id) }
            }
            if mayKnow || !entries(of: key).isEmpty { append(change) }
        }
    }

    private mutating func enqueue(patch: PushChange, key: RecordKey, inFlight: Set<Int64>) {
        let all = entries(of: key)
        if let last = all.last, !inFlight.contains(last.id), last.change.action == .create, !last.attempted {
            put(OutboxEntry(id: last.id, change: last.change.folding(patch), attempted: false))
            return
        }
        // The earlier patches since the record's last pending delete give up the fields this one sets.
        let carried = patch.fieldIndexes
        for entry in all.reversed().prefix(while: { !$0.isDelete }) where entry.change.action == .patch && !inFlight.contains(entry.id) {
            let rest = entry.change.removing(carried)
            if rest.fieldIndexes.isEmpty {
                remove(entry.id)
            } else if rest != entry.change {
                put(OutboxEntry(id: entry.id, change: rest, attempted: entry.attempted))
            }
        }
        append(patch)
    }

    private mutating func append(_ change: PushChange) {
        put(OutboxEntry(id: nextID, change: change))
    }

    /// Whether this device's own later pending changes of `entry`'s record decide whatever the
    /// server made of `entry` (a write): a later write carries every field it carries again, or a
    /// later delete of the record follows. (A delete replaces the edits before it that are not in
    /// flight, even one the server may hold already, and keeps a category's create its queued
    /// places need: that create's replay can meet the replaced edit on the server.)
    func isSuperseded(_ entry: OutboxEntry) -> Bool {
        guard !entry.isDelete else { return false }
        var later: Set<Int> = []
        for other in entries(of: entry.key) where other.id > entry.id {
            if other.isDelete { return true }
            later.formUnion(other.change.fieldIndexes)
        }
        return entry.change.fieldIndexes.isSubset(of: later)
    }

    /// Whether a pending change needs category `id` live on the server.
    func hasDependents(ofCategory id: UUID) -> Bool {
        entries.values.contains { entry in
            entry.locationCategory == id || entry.reassignTarget == id
        }
    }

    /// After the server refused or lost the record's create (it has no such record), the next
    /// pending write of the record becomes a create, so it does not fail as an update of nothing:
    /// an update with its own content, a patch with the whole record as the device holds it
    /// (`wholeRecord`, at the patch's time).
    mutating func promoteToCreate(_ key: RecordKey, wholeRecord: (Date?) -> PushChange?) {
        guard var next = entries(of: key).first else { return }
        switch next.change {
        case .updateCategory(let write): next.change = .createCategory(write)
        case .updateLocation(let write): next.change = .createLocation(write)
        case .patchCategory, .patchLocation:
            guard let create = wholeRecord(next.change.updatedAt) else { return }
            next.change = create
        default: return
        }
        put(next)
    }

    // MARK: Batches

    /// The next batch: at most `limit` entries, none of `excluded` (in flight, or skipped in this
    /// sync), taken in the order made with their prerequisites (see the type's documentation), and
    /// returned in the order the server applies them: category writes, location changes, category
    /// deletes, each group in the order made.
    func nextBatch(limit: Int, excluding excluded: Set<Int64> = []) -> [OutboxEntry] {
        var taken: [Int64] = []
        var inBatch = Set<Int64>()
        var blocked = false
        func canTake(_ entry: OutboxEntry) -> Bool {
            guard !excluded.contains(entry.id) else { return false }
            // A write of a category after its pending delete waits until the delete is answered.
            if entry.key.kind == .category && !entry.isCategoryDelete {
                return !entries(of: entry.key).contains { $0.isCategoryDelete && $0.id < entry.id }
            }
            return true
        }
        for entry in ordered {
            if taken.count >= limit { break }
            if inBatch.contains(entry.id) { continue }
            guard canTake(entry) else {
                blocked = true
                continue
            }
            if entry.isCategoryDelete {
                // Everything made before it must go first; a delete left behind blocks later ones.
                if blocked { continue }
                if let target = entry.reassignTarget, let create = pendingCreate(ofCategory: target), !inBatch.contains(create.id) {
                    blocked = true
                    continue
                }
            } else if let category = entry.locationCategory, let create = pendingCreate(ofCategory: category),
                !inBatch.contains(create.id)
            {
                guard canTake(create), taken.count + 2 <= limit else {
                    blocked = true
                    continue
                }
                taken.append(create.id)
                inBatch.insert(create.id)
            }
            taken.append(entry.id)
            inBatch.insert(entry.id)
        }
        return Self.contractOrder(taken.compactMap { entries[$0] })
    }

    /// The category's pending create (or revive), if it has not been answered yet.
    private func pendingCreate(ofCategory id: UUID) -> OutboxEntry? {
        entries(of: RecordKey(kind: .category, id: id)).first { !$0.isCategoryDelete }
    }

    /// Stable sort into the order the server applies a batch (openapi.yaml).
    static func contractOrder(_ entries: [OutboxEntry]) -> [OutboxEntry] {
        entries.sorted { ($0.change.applicationGroup, $0.id) < ($1.change.applicationGroup, $1.id) }
    }
}

extension OutboxEntry {
    var isDelete: Bool { change.action == .delete }
}

extension PushChange {
    /// The fields a write carries, by index (`CategoryField`/`LocationField` raw values): a
    /// patch's, every field for a create or update, none for a delete.
    var fieldIndexes: Set<Int> {
        switch self {
        case .patchCategory(let patch): Set(patch.fields.map(\.rawValue))
        case .patchLocation(let patch): Set(patch.fields.map(\.rawValue))
        case .createCategory, .updateCategory: Set(CategoryField.allCases.map(\.rawValue))
        case .createLocation, .updateLocation: Set(LocationField.allCases.map(\.rawValue))
        case .deleteCategory, .deleteLocation: []
        }
    }

    /// This patch without the fields of index `indexes` (other changes as they are).
    func removing(_ indexes: Set<Int>) -> PushChange {
        switch self {
        case .patchCategory(let patch): .patchCategory(patch.removing(Set(patch.fields.filter { indexes.contains($0.rawValue) })))
        case .patchLocation(let patch): .patchLocation(patch.removing(Set(patch.fields.filter { indexes.contains($0.rawValue) })))
        default: self
        }
    }

    /// This pending write with `newer`'s content and time: a create stays a create (the server
    /// may never have seen the record) and keeps its `created_at`; a patch folded into a create
    /// sets its fields in the create's content.
    func folding(_ newer: PushChange) -> PushChange {
        switch (self, newer) {
        case (.createCategory(var write), .patchCategory(let patch)):
            for field in patch.fields { write.take(field, from: patch.values) }
            write.updatedAt = patch.updatedAt
            return .createCategory(write)
        case (.createLocation(var write), .patchLocation(let patch)):
            for field in patch.fields { write.take(field, from: patch.values) }
            write.updatedAt = patch.updatedAt
            return .createLocation(write)
        case (.createCategory(let old), .createCategory(var write)), (.createCategory(let old), .updateCategory(var write)):
            write.createdAt = old.createdAt ?? write.createdAt
            return .createCategory(write)
        case (.createLocation(let old), .createLocation(var write)), (.createLocation(let old), .updateLocation(var write)):
            write.createdAt = old.createdAt ?? write.createdAt
            return .createLocation(write)
        default:
            return newer
        }
    }
}
