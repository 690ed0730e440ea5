import Foundation
import LocifyRules

/// An offline-first copy of the user's categories and locations, kept in a ``LocalStore`` and
/// reconciled with the server by ``sync()``.
///
/// Edits apply locally at once and are queued in an outbox, stamped with the device's clock
/// corrected by its offset from the server's (learnt from every sync answer's `server_time`), and
/// never earlier than 1 ms after the record's last known time, so an edit made after seeing a
/// record wins over it even when this device's clock is behind. The outbox keeps what depends on
/// what (``OutboxState``): ``sync()`` pushes it in batches of at most `/v1/info`'s
/// `max_push_changes`, cut so the server never applies a change before one it depends on, then
/// follows the change feed to its end. Conflicts are settled by the server's last-write-wins
/// rule: the engine adopts the server's record when a local change loses (E008), rebuilds the
/// copy from a snapshot when the cursor expired (E009) without losing unsynced changes, and
/// replays a batch whose answer was lost. Every refusal is reported with the change it concerns.
///
/// An actor: every method runs off the caller's thread, and edits may be made while a sync runs.
public actor SyncEngine {
    /// The API the engine talks to.
    public let api: LocifyAPIClient
    let store: any LocalStore
    let clock: @Sendable () -> Date
    /// Changes per pull request (1-1000; default 1000, the API's largest: fewer round trips),
    /// lowered to the server's `max_pull_limit`.
    public var pullLimit = 1000
    /// Longest `Retry-After` (seconds) the engine waits out by itself on S001 or S003; longer
    /// ones fail the sync (default 5, 0 never waits).
    public var maxRetryAfter = 5

    /// The outbox, metadata and refused changes as committed (loaded from the store at first use).
    var state: EngineState?
    private var inFlight: Set<Int64> = []
    private(set) var isSyncing = false
    private var syncWaiters: [CheckedContinuation<Void, Never>] = []
    private var subscribers: [UUID: AsyncStream<SyncEvent>.Continuation] = [:]
    var statusSubscribers: [UUID: AsyncStream<SyncStatus>.Continuation] = [:]
    /// What a status view shows (SyncStatus.swift): ``statusUpdates()`` publishes each change.
    public internal(set) var status = SyncStatus()
    private(set) var info: ServerInfo?
    /// How many times the store was erased (``reset()``).
    private var erasures: UInt64 = 0
    /// The latest time this engine stamped an edit with: each new edit gets a later one.
    private var lastStamp: Int64 = .min
    /// The server clock's offset from the device's, learnt from the sync answers (ServerClock.swift).
    private var serverClock = ServerClockOffset()
    /// Whether ``serverClock`` was read from the store yet.
    private var serverClockLoaded = false
    /// Live mode's state (LiveSync.swift): whether it runs, its edit signal, the sync turns taken.
    var live = LiveModeState()
    /// The scheduler ``start(_:)`` runs (SyncEngine+Schedule.swift), told of each local edit.
    var scheduler: SyncScheduler?
    /// Follows the schedule's connectivity for the status.
    var connectivityWatch: Task<Void, Never>?
    /// Follows the scheduler's state for the status (``SyncStatus/schedule``).
    var scheduleWatch: Task<Void, Never>?
    /// How long a pull may hold pages before it stores them (``setPullCommitInterval(_:)``).
    private var pullCommitIntervalSetting = SyncEngine.pullCommitInterval
    /// Who uploads the photos of places edited offline, and how (ImageUploads.swift).
    var imageUploads: (uploader: any ImageUploader, settings: ImageUploadSettings)?
    /// The round of photo uploads running, and what rounds did since the last report.
    var imageWork = ImageUploadWork()

    /// - Parameters:
    ///   - api: the server.
    ///   - store: where the copy, the outbox and the cursor live.
    ///   - clock: the device's clock (injectable for tests).
    public init(api: LocifyAPIClient, store: any LocalStore, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.api = api
        self.store = store
        self.clock = clock
    }

    /// Sets how many changes one pull asks for (clamped to 1-1000).
    public func setPullLimit(_ limit: Int) {
        pullLimit = min(max(limit, 1), 1000)
    }

    /// Sets ``maxRetryAfter``.
    public func setMaxRetryAfter(_ seconds: Int) {
        maxRetryAfter = max(seconds, 0)
    }

    /// Lets places carry photos taken offline: a `file://` URL of a file in the settings'
    /// ``ImageUploadSettings/photoDirectory`` in ``LocationDraft/imageURLs`` is kept on the
    /// device (as `file:<relative path>`) and queued for upload. The place is pushed at once
    /// without it; each ``sync()`` starts a round of uploads through `uploader` in the background
    /// (never waiting for it), and each uploaded photo's URL replaces its file in the place as it
    /// then is, an edit of its own pushed like any other. The server never sees a file URL.
    /// Without an uploader such URLs are refused (E001).
    public func setImageUploader(_ uploader: any ImageUploader, settings: ImageUploadSettings = ImageUploadSettings()) {
        imageUploads = (uploader, settings)
    }

    // MARK: Events

    /// A new stream of what the engine does while syncing. Each call makes its own stream; it ends
    /// when the consumer stops iterating.
    public func events() -> AsyncStream<SyncEvent> {
        let (stream, continuation) = AsyncStream<SyncEvent>.makeStream(bufferingPolicy: .bufferingNewest(1000))
        subscribers[subscribe(continuation)] = continuation
        return stream
    }

    /// A key for a new subscriber's `continuation`, which forgets it when its consumer stops.
    func subscribe<Element>(_ continuation: AsyncStream<Element>.Continuation) -> UUID {
        let id = UUID()
        continuation.onTermination = { [weak self] _ in
            Task { await self?.unsubscribe(id) }
        }
        return id
    }

    private func unsubscribe(_ id: UUID) {
        subscribers[id] = nil
        statusSubscribers[id] = nil
    }

    /// Reports `event` to the subscribers and the log, and what it changes to the status.
    func emit(_ event: SyncEvent) {
        updateStatus { $0.apply(event, pending: state?.outbox.count ?? 0) }
        event.log(to: api.logger)
        for continuation in subscribers.values { continuation.yield(event) }
    }

    // MARK: Reading

    /// The live categories, by name (case-insensitive) then id, with `locationCount` counted
    /// from the local copy.
    public func categories() async throws -> [Category] {
        try reading { try $0.categories() }
    }

    /// The live locations (of one category, if given), newest first.
    public func locations(in categoryID: UUID? = nil) async throws -> [Location] {
        try reading { try $0.locations(LocalQuery(categoryID: categoryID, limit: nil)) }
    }

    /// The live locations `query` selects, in its order: the server's listing offline (LocalQueries.swift).
    public func locations(_ query: LocalQuery) async throws -> [Location] {
        try Self.checkSearch(query)
        return try reading { try $0.locations(query) }
    }

    /// One category of the local copy (nil when there is none, or it was deleted).
    public func category(id: UUID) async throws -> Category? {
        try reading { try $0.category(id: id) }
    }

    /// One location of the local copy.
    public func location(id: UUID) async throws -> Location? {
        try reading { try $0.location(id: id) }
    }

    /// Local changes the server has not acknowledged yet, in the order they were made.
    public func pendingChanges() async throws -> [OutboxEntry] {
        try loaded().outbox.ordered
    }

    /// The whole local state (records, outbox, cursor): for tests and debugging, it reads every
    /// record.
    public func localSnapshot() async throws -> LocalSnapshot {
        let state = try loaded()
        return try reading { store in
            LocalSnapshot(
                categories: Dictionary(uniqueKeysWithValues: try store.categories().map { ($0.id, $0) }),
                locations: Dictionary(uniqueKeysWithValues: try store.locations(LocalQuery(limit: nil)).map { ($0.id, $0) }),
                outbox: state.outbox.ordered, refused: state.refused.values.sorted { $0.id < $1.id }, metadata: state.metadata)
        }
    }

    // MARK: Editing

    /// Creates or edits a category locally and queues the change.
    /// - Returns: the record as stored locally.
    @discardableResult
    public func saveCategory(id: UUID = UUID(), name: String, icon: String? = nil) async throws -> Category {
        try saveCategory(id: id, name: name, icon: icon, resolving: nil)
    }

    /// ``saveCategory(id:name:icon:)``, dropping refused change `resolving` in the same commit.
    @discardableResult
    func saveCategory(id: UUID, name: String, icon: String?, resolving: Int64?) throws -> Category {
        let fields = try Self.checked { () throws(RuleViolation) in try CategoryFields(name: name, icon: icon) }
        let name = fields.name, icon = fields.icon
        var transaction = try begin(resolving: resolving)
        guard let existing = try transaction.category(id) else {
            let at = stamp(after: nil)
            let category = Category(id: id, name: name, icon: icon, createdAt: at, updatedAt: at)
            transaction.upsert(category, clock: CategoryClock(writtenWhole: at.timestamp))
            transaction.enqueue(.createCategory(CategoryWrite(category, at: at)), serverMayKnow: false, inFlight: inFlight)
            try commit(&transaction)
            return category
        }
        // An edit: a patch of the fields it changes (issue 36), none when it changes nothing.
        var write = CategoryWrite(id: id, name: name, icon: icon, createdAt: existing.createdAt)
        let changed = Set(CategoryField.allCases.filter { !existing.holds($0, of: write) })
        if changed.isEmpty {
            try commit(&transaction)
            return existing
        }
        let at = stamp(after: existing.updatedAt)
        write.updatedAt = at
        var category = existing, clock = try transaction.clock(of: existing)
        category.decide(.patch(changed), write, at: at, clock: &clock)
        transaction.upsert(category, clock: clock)
        transaction.enqueue(.patchCategory(CategoryPatch(write, fields: changed)), serverMayKnow: existing.version > 0, inFlight: inFlight)
        try commit(&transaction)
        return category
    }

    /// Creates or edits a location locally (its category must exist locally) and queues the change.
    /// - Returns: the record as stored locally.
    @discardableResult
    public func saveLocation(_ draft: LocationDraft) async throws -> Location {
        try saveLocation(draft, resolving: nil)
    }

    /// ``saveLocation(_:)``, dropping refused change `resolving` in the same commit.
    @discardableResult
    func saveLocation(_ original: LocationDraft, resolving: Int64?) throws -> Location {
        let merged = try original.base == nil ? original : original.merged(onto: reading { try $0.location(id: original.id) })
        let draft = try withImageReferences(merged)
        let fields = try Self.checked { () throws(RuleViolation) in
            try LocationFields(
                name: draft.name, address: draft.address, description: draft.description, latitude: draft.latitude,
                longitude: draft.longitude, isFavorite: draft.isFavorite, imageURLs: LocalImage.standIns(draft.imageURLs))
        }
        var transaction = try begin(resolving: resolving)
        let categoryIsLive = try transaction.category(draft.categoryID) != nil
        try Self.checked { () throws(RuleViolation) in try LocationRules.checkCategory(isLive: categoryIsLive) }
        let existing = try transaction.location(draft.id)
        // An edit is a patch (issue 36): of the fields changed since the draft's base, or of
        // every field for a draft without one (a record the app built whole); none: no change.
        let changed = existing == nil ? Set(LocationField.allCases) : original.changedFields
        if changed.isEmpty, let existing {
            try commit(&transaction)
            return existing
        }
        let at = stamp(after: existing?.updatedAt)
        let write = LocationWrite(
            id: draft.id, categoryID: draft.categoryID, name: fields.name, address: fields.address,
            description: fields.description, latitude: fields.latitude, longitude: fields.longitude,
            isFavorite: fields.isFavorite, imageURLs: draft.imageURLs, createdAt: existing?.createdAt ?? at, updatedAt: at)
        var location = Location(
            id: write.id, categoryID: write.categoryID, name: write.name, address: write.address, description: write.description,
            latitude: write.latitude, longitude: write.longitude, isFavorite: write.isFavorite, imageURLs: write.imageURLs,
            createdAt: at, updatedAt: at)
        var clock = LocationClock(writtenWhole: at.timestamp)
        if let existing {
            (location, clock) = (existing, try transaction.clock(of: existing))
            location.decide(.patch(changed), write, at: at, clock: &clock)
        }
        transaction.upsert(location, clock: clock)
        transaction.enqueue(
            existing == nil ? .createLocation(write) : .patchLocation(LocationPatch(write, fields: changed)),
            serverMayKnow: (existing?.version ?? 0) > 0, inFlight: inFlight)
        try commit(&transaction)
        discardLocalFiles(of: existing, keeping: location.imageURLs)
        return location
    }

    /// Deletes a location locally and queues the delete.
    /// - Returns: the deletion's time (its `deleted_at` once the server applies it).
    @discardableResult
    public func deleteLocation(id: UUID) async throws -> Date {
        try deleteLocation(id: id, resolving: nil)
    }

    /// ``deleteLocation(id:)``, dropping refused change `resolving` in the same commit.
    @discardableResult
    func deleteLocation(id: UUID, resolving: Int64?) throws -> Date {
        var transaction = try begin(resolving: resolving)
        guard let existing = try transaction.location(id) else {
            throw LocifyError(RuleViolation.notFound("location"))
        }
        let at = stamp(after: existing.updatedAt)
        transaction.removeLocation(id)
        transaction.enqueue(.deleteLocation(DeleteWrite(id: id, updatedAt: at)), serverMayKnow: existing.version > 0, inFlight: inFlight)
        try commit(&transaction)
        discardLocalFiles(of: existing, keeping: [])
        return at
    }

    /// Deletes a category locally with its locations, or moving them to `reassignTo`, and queues
    /// the delete. If the server keeps the category (a newer edit elsewhere), it and its locations
    /// come back as the server has them.
    /// - Returns: the deletion's time.
    @discardableResult
    public func deleteCategory(id: UUID, reassignTo: UUID? = nil) async throws -> Date {
        try deleteCategory(id: id, reassignTo: reassignTo, resolving: nil)
    }

    /// ``deleteCategory(id:reassignTo:)``, dropping refused change `resolving` in the same commit.
    @discardableResult
    func deleteCategory(id: UUID, reassignTo: UUID?, resolving: Int64?) throws -> Date {
        if let reassignTo {
            try Self.checked { () throws(RuleViolation) in try CategoryRules.checkReassignTarget(reassignTo, deleting: id) }
        }
        var transaction = try begin(resolving: resolving)
        guard let existing = try transaction.category(id) else {
            throw LocifyError(RuleViolation.unknownCategory)
        }
        if let reassignTo {
            let targetIsKnown = try transaction.category(reassignTo) != nil
            try Self.checked { () throws(RuleViolation) in try CategoryRules.checkReassignTarget(isKnown: targetIsKnown) }
        }
        let at = stamp(after: existing.updatedAt)
        for locationID in try transaction.locationIDs(inCategory: id) {
            if let reassignTo, let location = try transaction.location(locationID) {
                transaction.upsert(location.moved(to: reassignTo, at: at), clock: try transaction.clock(of: location).stamping(.categoryID, at: at.timestamp))
            } else {
                transaction.removeLocation(locationID)
            }
        }
        transaction.removeCategory(id)
        transaction.enqueue(
            .deleteCategory(DeleteWrite(id: id, updatedAt: at, reassignCategoryID: reassignTo)), serverMayKnow: existing.version > 0,
            inFlight: inFlight)
        try commit(&transaction)
        return at
    }

    /// Signs the user out of this device: stops syncing (the schedule, live mode, a running sync),
    /// then erases the store (records, outbox, refused changes, cursor and the user it belonged
    /// to), so the next user starts from an empty store and nothing of this one stays on the
    /// device. (The store is cleared rather than kept encrypted per user: the server holds the
    /// data, and a store left behind would be readable by whoever uses the device next.)
    ///
    /// Changes not yet pushed and photos not yet uploaded would be lost: unless
    /// `discardingUnsyncedChanges`, it first tries one sync (and a round of uploads) and, if some
    /// remain (offline, a failure), throws ``LocifyError/unsyncedChanges(_:)`` and erases nothing;
    /// the app then asks the user whether to sign out anyway, and calls again with
    /// `discardingUnsyncedChanges: true`.
    public func signOut(discardingUnsyncedChanges: Bool = false) async throws {
        await stop()
        live.work?.cancel()
        if !discardingUnsyncedChanges, try unsyncedCount() > 0 {
            _ = try? await sync()
            if try !loaded().metadata.pendingImages.isEmpty {
                // Photos not yet uploaded are unsynced too: their round, then their URLs' push.
                await uploadPendingImages()
                _ = try? await sync()
            }
            let left = try unsyncedCount()
            if left > 0 { throw LocifyError.unsyncedChanges(left) }
        }
        try await reset()
    }

    /// Pending changes and photos not yet uploaded: what a sign-out would lose.
    private func unsyncedCount() throws -> Int {
        let state = try loaded()
        return state.outbox.count + state.metadata.pendingImages.count
    }

    /// Erases the local copy, its outbox (pending changes are lost), its refused changes and its
    /// user, after a store failure (``signOut(discardingUnsyncedChanges:)`` also stops syncing
    /// first); the next ``sync()`` starts again from a snapshot.
    public func reset() async throws {
        await acquireSyncTurn()
        defer { releaseSyncTurn() }
        stopImageUploads()
        let photos = (try? loaded().metadata.pendingImages.map(\.url)) ?? []
        do {
            try store.erase()
        } catch {
            throw LocifyError.storeFailed(String(describing: error))
        }
        removeFiles(of: photos)
        state = nil
        inFlight = []
        erasures &+= 1
        updateStatus { $0 = SyncStatus() }
    }

    // MARK: Sync

    /// Pushes every pending change, then pulls the change feed to its end. Calls made while a
    /// sync runs wait for it and then sync again. Throws (and leaves unacknowledged changes
    /// queued) on network and server failures; cancelling the calling task stops it between
    /// requests or aborts the request in flight (``LocifyError/cancelled``).
    @discardableResult
    public func sync() async throws -> SyncReport {
        let erasure = erasures
        await acquireSyncTurn()
        defer { releaseSyncTurn() }
        _ = try? loaded()  // the pending count the progress starts from
        emit(.started)
        var report = SyncReport()
        do {
            // A sync asked for before a sign-out (or reset) that ran first, or cancelled while it
            // waited, does nothing: it would bind the empty store to the old token's user.
            if erasures != erasure { throw LocifyError.cancelled }
            try Self.checkCancellation()
            let user = try await boundUser()
            let limits = try await serverInfo()
            startImageUploads()
            try await pushAll(limit: max(limits.maxPushChanges, 1), user: user, report: &report)
            try await pullAll(user: user, report: &report)
            (report.imagesUploaded, report.imageUploadsFailed) = imageWork.takeCounts()
            emit(.finished(report))
            return report
        } catch {
            let failure = Self.locifyError(error)
            emit(.failed(failure))
            throw failure
        }
    }

    /// The user of the current token, which the store must belong to: a new store is bound to it,
    /// a store of another user is refused (``LocifyError/wrongAccount(storeUser:tokenUser:)``).
    private func boundUser() async throws -> String {
        let user = try await api.currentUserID()
        let bound = try loaded().metadata.userID
        if let bound, bound != user { throw LocifyError.wrongAccount(storeUser: bound, tokenUser: user) }
        if bound == nil {
            var transaction = try begin()
            transaction.bind(user: user)
            try commit(&transaction)
        }
        return user
    }

    func serverInfo() async throws -> ServerInfo {
        if let info { return info }
        let fetched = try await patiently { try await self.api.info() }
        info = fetched
        return fetched
    }

    private func pushAll(limit: Int, user: String, report: inout SyncReport) async throws {
        var skipped = Set<Int64>()
        var batchLimit = limit
        while true {
            try Self.checkCancellation()
            let outbox = try loaded().outbox
            let batch = outbox.nextBatch(limit: batchLimit, excluding: skipped.union(inFlight))
            if batch.isEmpty { return }
            // Marked as sent before it is sent: from now on the server may hold it.
            var marking = try begin()
            for var entry in batch where !entry.attempted {
                entry.attempted = true
                marking.putOutbox(entry)
            }
            try commit(&marking)
            let ids = Set(batch.map(\.id))
            inFlight.formUnion(ids)
            let results: [PushResult]
            do {
                let sent = clock()
                let answer = try await patiently { try await self.api.push(batch.map(\.change), asUser: user) }
                learnServerTime(ServerTimeSample(answer.serverTime, sent: sent, received: clock()))
                results = answer.results
            } catch let error as LocifyError where error.refusesWholeBatch {
                inFlight.subtract(ids)
                if batch.count > 1 {
                    // Too large or refused as a whole: split it until the change at fault is alone.
                    batchLimit = max(batch.count / 2, 1)
                    continue
                }
                results = [PushResult(refused: batch[0].change, error)]
            } catch {
                inFlight.subtract(ids)
                throw error
            }
            do {
                try await apply(results, of: batch, skipped: &skipped, report: &report)
                inFlight.subtract(ids)
            } catch {
                inFlight.subtract(ids)
                throw error
            }
            batchLimit = limit
        }
    }

    /// What the engine must learn from the server before it takes in a batch's results: the
    /// state of records whose change was refused, and the locations of categories whose delete
    /// did not happen (they come back as the server has them).
    private struct ServerReads {
        var records: [RecordKey: RecordState?] = [:]
        var categoryLocations: [UUID: [Location]] = [:]
    }

    /// Takes in one batch's results in one commit. What must be read from the server is read
    /// first (if a read fails the batch stays queued and is replayed, which is safe).
    private func apply(
        _ results: [PushResult], of batch: [OutboxEntry], skipped: inout Set<Int64>, report: inout SyncReport
    ) async throws {
        var reads = ServerReads()
        for (entry, result) in zip(batch, results) {
            switch result.status {
            case .error:
                if entry.change.isLocationDelete && result.error?.code == "E007" { continue }
                reads.records[entry.key] = try await read(entry.key)
                if let target = entry.reassignTarget {
                    reads.records[RecordKey(kind: .category, id: target)] = try await read(RecordKey(kind: .category, id: target))
                }
                if entry.isCategoryDelete, case .category? = reads.records[entry.key] ?? nil {
                    reads.categoryLocations[entry.key.id] = try await locations(ofCategory: entry.key.id)
                }
            case .conflict where entry.isCategoryDelete:
                reads.categoryLocations[entry.key.id] = try await locations(ofCategory: entry.key.id)
            default:
                break
            }
        }
        var transaction = try begin()
        // The times of this device's category deletes that may have reached the server: a record
        // stamped with one of them was last written by this device (stamps are unique per device).
        let ownStamps = Set(
            transaction.outbox.ordered.filter { $0.attempted && $0.isCategoryDelete }.compactMap { $0.change.updatedAt?.locifyMilliseconds })
        var counts = (applied: 0, conflicts: 0, rejected: 0)
        for (entry, result) in zip(batch, results) {
            if case .unknown(let status) = result.status {
                // Reported and left queued, not sent again in this sync.
                skipped.insert(entry.id)
                transaction.events.append(.unrecognized("push status \(status) for \(entry.change.kind) \(entry.change.recordID)"))
                continue
            }
            transaction.removeOutbox(entry.id)
            switch result.status {
            case .applied, .unknown:
                counts.applied += 1
                if let record = result.record { try transaction.adopt(record, fieldUpdatedAt: result.fieldUpdatedAt) }
            case .conflict:
                if let record = result.record, ownStamps.contains(record.updatedAt.locifyMilliseconds) {
                    // A replay that met what this device's own later change (a category delete
                    // sent before, whose answer was lost) made of the record: nothing was lost.
                    counts.applied += 1
                    try transaction.adopt(record)
                    continue
                }
                if transaction.outbox.isSuperseded(entry) {
                    // Every field it carries, this device wrote again later, or it deleted the
                    // record later (a create whose answer was lost, replayed after its next edit
                    // was applied too): nothing is lost.
                    counts.applied += 1
                    if let record = result.record { try transaction.adopt(record, fieldUpdatedAt: result.fieldUpdatedAt) }
                    continue
                }
                counts.conflicts += 1
                if let record = result.record {
                    try transaction.adopt(record, fieldUpdatedAt: result.fieldUpdatedAt)
                    transaction.events.append(.conflictResolved(record))
                }
                if entry.isCategoryDelete { try restore(entry.key.id, reads, in: &transaction) }
            case .error:
                let known = reads.records[entry.key]
                // A delete of a record the server never had (its create never reached it): done.
                if result.error?.code == "E007", entry.isDelete, known == .some(nil) || entry.change.isLocationDelete {
                    counts.applied += 1
                    continue
                }
                // A replayed place write whose category this device's own later delete, sent
                // before, has removed since (E007): the write was applied, then superseded.
                if result.error?.code == "E007", let category = entry.locationCategory,
                    Self.ownDeleteSentBefore(ofCategory: category, after: entry, batch: batch, outbox: transaction.outbox)
                {
                    counts.applied += 1
                    if let known, let state = known { try transaction.adopt(state) } else if known != nil { transaction.adoptAbsence(entry.key) }
                    continue
                }
                counts.rejected += 1
                let error = result.error ?? .unexpectedResponse(status: 200, body: "error result without error")
                transaction.events.append(.changeRejected(entry.change, error))
                transaction.refuse(
                    RefusedChange(
                        id: entry.id, change: entry.change,
                        error: error.serverError ?? ServerError(status: 0, code: "", message: String(describing: error)), refusedAt: clock()))
                var keys = [entry.key]
                if let target = entry.reassignTarget { keys.append(RecordKey(kind: .category, id: target)) }
                for key in keys {
                    guard let state = reads.records[key] else { continue }
                    if let state { try transaction.adopt(state) } else { transaction.adoptAbsence(key) }
                }
                if known == .some(nil) { try transaction.promoteToCreate(entry.key) }
                if entry.isCategoryDelete { try restore(entry.key.id, reads, in: &transaction) }
            }
        }
        try commit(&transaction)
        report.pushed += batch.count
        report.applied += counts.applied
        report.conflicts += counts.conflicts
        report.rejected += counts.rejected
        emit(.pushed(changes: batch.count, applied: counts.applied, conflicts: counts.conflicts, rejected: counts.rejected))
    }

    /// Whether this device deleted category `id` after making `entry`, in a delete sent before
    /// the current push (`batch` holds the entries as they were before it was sent): then the
    /// server may have applied both, and `entry` met the category already deleted when replayed.
    private static func ownDeleteSentBefore(ofCategory id: UUID, after entry: OutboxEntry, batch: [OutboxEntry], outbox: OutboxState) -> Bool {
        outbox.entries(of: RecordKey(kind: .category, id: id)).contains { delete in
            guard delete.isCategoryDelete, delete.id > entry.id else { return false }
            return batch.first { $0.id == delete.id }?.attempted ?? delete.attempted
        }
    }

    /// A category delete that did not happen on the server: its locations come back as the server
    /// has them (a location with a newer pending local change keeps it).
    private func restore(_ categoryID: UUID, _ reads: ServerReads, in transaction: inout StoreTransaction) throws {
        guard let locations = reads.categoryLocations[categoryID] else { return }
        for location in locations { try transaction.adopt(.location(location)) }
        transaction.events.append(.restored(categoryID: categoryID, locationIDs: locations.map(\.id)))
    }

    /// The server's state of one record, or nil when it has none (E007).
    private func read(_ key: RecordKey) async throws -> RecordState? {
        do {
            switch key.kind {
            case .category: return .category(try await patiently { try await self.api.category(id: key.id) })
            case .location: return .location(try await patiently { try await self.api.location(id: key.id) })
            }
        } catch LocifyError.notFound {
            return nil
        }
    }

    private func locations(ofCategory id: UUID) async throws -> [Location] {
        try await patiently { try await self.api.allLocations(LocifyAPIClient.LocationQuery(categoryID: id)) }
    }

    /// Follows the change feed from the stored cursor to its end. `answered` is the feed's page
    /// after the stored cursor when it was already fetched (a long-poll's answer): it is applied
    /// in place of the first request.
    ///
    /// Pages are stored in few commits and fetched while the ones before are stored: the first
    /// page of a pull is committed at once (the list is usable while the rest arrives), later ones
    /// are held until ``pullCommitChanges`` changes or ``pullCommitInterval`` have gathered, and
    /// the next page is on its way while they are stored. Held pages are applied in one
    /// transaction with no wait inside it, so they meet the outbox as it is when they are stored
    /// (edits made meanwhile keep precedence), exactly as if they had arrived then. (A store's
    /// write cost depends on the pages a commit touches, not on its rows: at 100,000 records one
    /// commit of 10,000 rows costs about what one of 1,000 does; bench/RESULTS.md.)
    func pullAll(user: String, report: inout SyncReport, answered: FeedPage? = nil) async throws {
        let cursor = try loaded().metadata.cursor
        // A first pull into a store that holds no records has nothing to drop at its end.
        let heldRecords = try cursor == nil && reading { try !$0.locations(LocalQuery(limit: 1)).isEmpty || !$0.categories().isEmpty }
        var progress = PullProgress(cursor: cursor, storeHeldRecords: heldRecords, commitInterval: pullCommitIntervalSetting)
        // Filling an empty store, its secondary indexes are built once at the end (`bulkLoad`).
        let bulkLoad = cursor == nil && !heldRecords
        if bulkLoad { try reading { try $0.bulkLoad(true) } }
        do {
            try await pullPages(&progress, user: user, report: &report, answered: answered)
        } catch {
            if bulkLoad { try? reading { try $0.bulkLoad(false) } }
            throw error
        }
        if bulkLoad { try reading { try $0.bulkLoad(false) } }
    }

    /// The pull's pages, from `progress.requested` to the end of the feed, stored as they come.
    private func pullPages(_ progress: inout PullProgress, user: String, report: inout SyncReport, answered: FeedPage?) async throws {
        var fetched: Result<FeedPage, any Error>? = progress.requested == nil ? nil : answered.map { .success($0) }
        let api = api, limit = min(pullLimit, info?.maxPullLimit ?? pullLimit), maxRetryAfter = maxRetryAfter
        while true {
            try Self.checkCancellation()
            let outcome: Result<FeedPage, any Error>
            if let prefetched = fetched {
                outcome = prefetched
                fetched = nil
            } else {
                outcome = await Self.feedPage(api, since: progress.requested, limit: limit, user: user, maxRetryAfter: maxRetryAfter, clock: clock)
            }
            let page: FeedPage
            do {
                page = try outcome.get()
                learnServerTime(page.timeSample)
            } catch let error as LocifyError where progress.requested != nil && (error.code == "E009" || error.code == "E001") {
                // The cursor expired (E009) or the server does not take it (E001): start again
                // from a snapshot, keeping the unsynced local changes.
                emit(.resyncStarted)
                report.resynced = true
                progress.beginResync()
                continue
            }
            progress.hold(page)
            if !page.hasMore {
                try store(&progress, report: &report)
                return
            }
            if progress.isDue {
                // The next page travels (and is decoded, off this actor) while these are stored.
                async let next = Self.feedPage(
                    api, since: page.cursor, limit: limit, user: user, maxRetryAfter: maxRetryAfter, clock: clock)
                try store(&progress, report: &report)
                fetched = await next
            }
        }
    }

    /// Most changes a pull holds before it stores them in one commit.
    static let pullCommitChanges = 10_000
    /// Longest time a pull holds pages before it stores them (so a slow network still shows
    /// progress).
    static let pullCommitInterval: Duration = .seconds(1)

    /// Sets how long a pull may hold pages before it stores them (``pullCommitInterval`` unless
    /// set): tests that count commits set it beyond their run, so that a slow machine does not
    /// turn every page into a commit of its own.
    func setPullCommitInterval(_ interval: Duration) {
        pullCommitIntervalSetting = interval
    }

    /// Where a pull stands: the cursor of its next request, the pages fetched and not yet stored,
    /// and what a first pull or a resync must remember.
    private struct PullProgress {
        /// The cursor of the next request (nil: a snapshot).
        var requested: String?
        /// Fetched, not yet stored, in feed order.
        var held: [FeedPage] = []
        var heldChanges = 0
        /// Whether nothing of this pull (or of its resync) has been stored yet.
        var storedNone = true
        var lastStored = ContinuousClock.now
        /// A resync starts by forgetting the synced records (the snapshot brings back what is still
        /// there). A store's first pull instead keeps them while it runs (forgetting them would
        /// hide the user's places until the last page arrived) and, once the whole snapshot has
        /// arrived in this sync, drops those it did not contain (deleted elsewhere meanwhile).
        var forgetFirst = false
        var isFirstPull: Bool
        /// What a first pull has seen, when the store held records at its start (else there is
        /// nothing to drop: every record then came from the snapshot or is queued).
        var seen: Set<RecordKey>?

        /// Longest time pages are held before they are stored.
        let commitInterval: Duration

        init(cursor: String?, storeHeldRecords: Bool, commitInterval: Duration) {
            self.commitInterval = commitInterval
            requested = cursor
            isFirstPull = cursor == nil
            seen = isFirstPull && storeHeldRecords ? [] : nil
        }

        /// Whether the held pages are stored now (the first page at once, then by size or time).
        var isDue: Bool {
            storedNone || heldChanges >= SyncEngine.pullCommitChanges || ContinuousClock.now - lastStored >= commitInterval
        }

        mutating func hold(_ page: FeedPage) {
            held.append(page)
            heldChanges += page.changes.count
            requested = page.cursor
        }

        mutating func beginResync() {
            requested = nil
            held = []
            heldChanges = 0
            storedNone = true
            forgetFirst = true
        }
    }

    /// Stores the held pages in one commit.
    private func store(_ progress: inout PullProgress, report: inout SyncReport) throws {
        guard let last = progress.held.last else { return }
        var transaction = try begin()
        if progress.forgetFirst {
            transaction.forgetSyncedRecords()
            progress.isFirstPull = false
            progress.seen = nil
        }
        for page in progress.held {
            for (index, change) in page.changes.enumerated() {
                if progress.seen != nil, let kind = change.kind, let id = change.id { progress.seen?.insert(RecordKey(kind: kind, id: id)) }
                switch change {
                case .upsert(let state): try transaction.adopt(state, fieldUpdatedAt: page.fieldUpdatedAt(ofChange: index))
                case .delete(let kind, let tombstone): try transaction.adopt(.tombstone(kind, tombstone))
                case .unrecognized(let type, let action): transaction.events.append(.unrecognized("feed change \(type) \(action)"))
                }
            }
        }
        if !last.hasMore, progress.isFirstPull, let seen = progress.seen { transaction.forgetSyncedRecords(except: seen) }
        // A first pull stores its cursor only at its end: cut short, it starts again from a
        // snapshot, so that its end still drops what the snapshot did not hold (a record this
        // device pushed and another deleted before the snapshot began appears in no page).
        if !progress.isFirstPull || !last.hasMore { transaction.setCursor(last.cursor) }
        if !last.hasMore { transaction.markSynced(at: clock()) }
        try commit(&transaction)
        for page in progress.held {
            report.pulled += page.changes.count
            emit(.pulled(changes: page.changes.count, hasMore: page.hasMore))
        }
        progress.held = []
        progress.heldChanges = 0
        progress.storedNone = false
        progress.forgetFirst = false
        progress.lastStored = ContinuousClock.now
    }

    /// One page of the feed, or what stopped it; runs off the actor (the decoding too), so that a
    /// page can be fetched while the ones before are stored.
    private nonisolated static func feedPage(
        _ api: LocifyAPIClient, since cursor: String?, limit: Int, user: String, maxRetryAfter: Int, clock: @Sendable () -> Date
    ) async -> Result<FeedPage, any Error> {
        do {
            let sent = clock()
            var page = try await patiently(maxRetryAfter: maxRetryAfter) { try await api.pull(since: cursor, limit: limit, asUser: user) }
            page.timeSample = ServerTimeSample(page.serverTime, sent: sent, received: clock())
            return .success(page)
        } catch {
            return .failure(error)
        }
    }

    // MARK: Plumbing

    /// Runs `request`, waiting out a short `Retry-After` of S001 (rate limited) or S003
    /// (unavailable) up to three times. The wait ends early when the task is cancelled.
    private func patiently<Result: Sendable>(_ request: @Sendable () async throws -> Result) async throws -> Result {
        try await Self.patiently(maxRetryAfter: maxRetryAfter, request)
    }

    /// `patiently`, waiting out at most `maxRetryAfter` seconds at a time.
    private nonisolated static func patiently<Result: Sendable>(
        maxRetryAfter: Int, _ request: @Sendable () async throws -> Result
    ) async throws -> Result {
        var attempt = 0
        while true {
            do {
                return try await request()
            } catch let error as LocifyError {
                attempt += 1
                let retryAfter: Int?
                switch error {
                case .rateLimited(_, let seconds), .unavailable(_, let seconds): retryAfter = seconds ?? 1
                default: retryAfter = nil
                }
                guard let retryAfter, retryAfter <= maxRetryAfter, attempt <= 3 else { throw error }
                do {
                    try await Task.sleep(for: .seconds(retryAfter))
                } catch {
                    throw LocifyError.cancelled
                }
            }
        }
    }

    /// Runs a read on the store, its failures reported as ``LocifyError/storeFailed(_:)``.
    func reading<Result>(_ body: (any LocalStore) throws -> Result) throws -> Result {
        do {
            return try body(store)
        } catch let error as LocifyError {
            throw error
        } catch {
            throw LocifyError.storeFailed(String(describing: error))
        }
    }

    func loaded() throws -> EngineState {
        if let state { return state }
        let (entries, metadata, refused) = try reading { store in (try store.outbox(), try store.metadata(), try store.refusedChanges()) }
        let loaded = EngineState(
            outbox: OutboxState(entries, nextID: metadata.nextOutboxID), metadata: metadata,
            refused: Dictionary(refused.map { ($0.id, $0) }, uniquingKeysWith: { _, last in last }))
        state = loaded
        if !serverClockLoaded {
            serverClockLoaded = true
            serverClock = ServerClockOffset(persisted: metadata.serverClockOffset)
        }
        updateStatus(from: loaded)
        // Edits after a relaunch are stamped after the ones still queued.
        if let latest = entries.compactMap({ $0.change.updatedAt?.locifyMilliseconds }).max() {
            lastStamp = max(lastStamp, latest)
        }
        try queueImagesOfOlderVersion()
        return state ?? loaded
    }

    /// A transaction on the committed state. It takes the outbox over, so that its first change
    /// does not copy it (a copy per edit cost time in proportion to the pending changes: half of
    /// an edit's time with 5,000 of them); ``commit(_:)`` gives it back, and a transaction dropped
    /// by an error leaves it to be reloaded from the store, which holds the truth.
    /// `resolving` is a refused change the transaction drops.
    func begin(resolving: Int64? = nil) throws -> StoreTransaction {
        let current = try loaded()
        state = nil
        var transaction = StoreTransaction(store: store, state: current)
        if let resolving { transaction.resolveRefusal(resolving) }
        return transaction
    }

    /// Commits `transaction` to the store in one atomic change and makes it the current state,
    /// then reports its events. A store failure changes nothing (the next use reloads from the
    /// store) and is thrown as ``LocifyError/storeFailed(_:)``.
    func commit(_ transaction: inout StoreTransaction) throws {
        if serverClock.isLearnt, transaction.metadata.serverClockOffset.map({ abs($0 - serverClock.milliseconds) >= 100 }) ?? true {
            transaction.setServerClockOffset(serverClock.milliseconds)  // kept for the next launch, to 0.1 s
        }
        let changes = transaction.takeChanges()
        if !changes.isEmpty {
            do {
                try store.commit(changes)
            } catch {
                state = nil
                throw LocifyError.storeFailed(String(describing: error))
            }
        }
        let committed = transaction.state
        state = committed
        updateStatus(from: committed)
        for event in transaction.events { emit(event) }
        if changes.upsertedOutbox.contains(where: { !$0.attempted }) {
            live.editSignal?.yield()
            scheduler?.localEdit()
        }
    }

    /// The device's time for a new edit of a record last stamped `previous`: never earlier than
    /// 1 ms after it, and after every earlier edit of this engine (so that a device's later edit
    /// always wins over its earlier one, even when its copy went back to an older server version
    /// after a refused change).
    private func stamp(after previous: Date?) -> Date {
        var milliseconds = serverClock.serverTime(at: clock())
        if let previous { milliseconds = max(milliseconds, previous.locifyMilliseconds + 1) }
        if lastStamp != .min { milliseconds = max(milliseconds, lastStamp + 1) }
        lastStamp = milliseconds
        return Date(locifyMilliseconds: milliseconds)
    }

    /// How far the server's clock is ahead of this device's (negative: behind), as learnt from the
    /// sync answers' `server_time` (0 before the first answer, or the last launch's): edits are
    /// stamped with the device's clock plus this.
    public var serverClockOffset: Duration { .milliseconds(serverClock.milliseconds) }

    /// Takes in the server's time of one answer (``ServerClockOffset``).
    func learnServerTime(_ sample: ServerTimeSample?) {
        guard let sample else { return }
        _ = try? loaded()  // the persisted estimate first, so that this one replaces it
        serverClock.learn(serverTime: sample.serverTime, sent: sample.sent, received: sample.received)
    }

    func acquireSyncTurn() async {
        while isSyncing {
            await withCheckedContinuation { syncWaiters.append($0) }
        }
        isSyncing = true
        live.turns &+= 1
    }

    func releaseSyncTurn() {
        isSyncing = false
        if !syncWaiters.isEmpty { syncWaiters.removeFirst().resume() }
    }

    private static func checkCancellation() throws {
        if Task.isCancelled { throw LocifyError.cancelled }
    }

    static func locifyError(_ error: any Error) -> LocifyError {
        if let error = error as? LocifyError { return error }
        if error is CancellationError { return .cancelled }
        return .unexpectedResponse(status: 0, body: String(describing: error))
    }

    /// Runs the shared rules (LocifyRules, the server's own) on an edit: a write the server
    /// would refuse is refused at once, with the server's code and message.
    @discardableResult
    static func checked<Result>(_ rules: () throws(RuleViolation) -> Result) throws(LocifyError) -> Result {
        do {
            return try rules()
        } catch {
            throw LocifyError(error)
        }
    }
}

extension LocifyError {
    /// A push the server refused as a whole (too large, or a batch it will not take): split it.
    var refusesWholeBatch: Bool {
        switch self {
        case .payloadTooLarge, .invalidInput: return true
        default: return false
        }
    }
}

extension PushChange {
    var isLocationDelete: Bool {
        if case .deleteLocation = self { return true }
        return false
    }
}

/// A location as the app edits it (the engine stamps the time and keeps the server's fields).
///
/// A draft of an existing location (``init(editing:)``) remembers the record it was read from, its
/// ``base``: saving it writes only the fields the user changed since onto the location as it is
/// then (a three-way merge), so a field another device changed while the edit form was open (a
/// pull brought a favourite, a photo) survives the save. A draft made from scratch has no base
/// and is saved whole.
public struct LocationDraft: Sendable, Hashable {
    /// The location's id: a new random one for a new location, the record's own for an edit.
    public var id: UUID
    /// Its category, which must exist in the local copy (else ``SyncEngine/saveLocation(_:)`` throws E007).
    public var categoryID: UUID
    /// Trimmed when saved; blank is refused (E001).
    public var name: String
    /// At most 1000 characters; blank is saved as nil.
    public var address: String?
    /// At most 1000 characters; blank is saved as nil.
    public var description: String?
    /// Degrees in [-90, 90] (else E003 at save).
    public var latitude: Double
    /// Degrees in [-180, 180] (else E003 at save).
    public var longitude: Double
    /// Whether the user marked the location as a favourite.
    public var isFavorite: Bool
    /// At most 10 distinct absolute `https` URLs; with an image uploader, also `file://` URLs of
    /// photos taken offline (``SyncEngine/setImageUploader(_:settings:)``).
    public var imageURLs: [String]
    /// The record this draft was read from (nil for a draft made from scratch): what the user's
    /// changes are measured against when it is saved.
    public private(set) var base: Location?

    /// A new location (a random `id` by default) with these fields, for ``SyncEngine/saveLocation(_:)``.
    public init(
        id: UUID = UUID(), categoryID: UUID, name: String, address: String? = nil, description: String? = nil,
        latitude: Double, longitude: Double, isFavorite: Bool = false, imageURLs: [String] = []
    ) {
        self.id = id
        self.categoryID = categoryID
        self.name = name
        self.address = address
        self.description = description
        self.latitude = latitude
        self.longitude = longitude
        self.isFavorite = isFavorite
        self.imageURLs = imageURLs
    }

    /// The draft of an existing location, to edit and save back: saving writes only the fields
    /// changed since onto the location as it is then (``base``).
    public init(editing location: Location) {
        self.init(
            id: location.id, categoryID: location.categoryID, name: location.name, address: location.address,
            description: location.description, latitude: location.latitude, longitude: location.longitude,
            isFavorite: location.isFavorite, imageURLs: location.imageURLs)
        base = location
    }

    /// The whole of `location` as a draft, saved whole (no ``base``): for a record the app built
    /// itself (a change to retry, a record changed in code). An edit form takes ``init(editing:)``.
    public init(_ location: Location) {
        self.init(editing: location)
        base = nil
    }

    /// The fields the user changed since ``base`` (every field without one).
    var changedFields: Set<LocationField> {
        guard let base else { return Set(LocationField.allCases) }
        let write = LocationWrite(
            id: id, categoryID: categoryID, name: name, address: address, description: description, latitude: latitude,
            longitude: longitude, isFavorite: isFavorite, imageURLs: imageURLs)
        return Set(LocationField.allCases.filter { !base.holds($0, of: write) })
    }

    /// The draft to save onto `current` (the location as it is now; nil when it is gone): the
    /// fields the user changed since ``base`` are this draft's, the others `current`'s. Photos
    /// merge as sets: the user's list in its order, less the ones another device removed since
    /// ``base`` and plus the ones it added (the user's list alone when that would exceed the limit).
    func merged(onto current: Location?) -> LocationDraft {
        guard let base, let current else { return self }
        func pick<Value: Equatable>(_ field: KeyPath<LocationDraft, Value>, _ same: KeyPath<Location, Value>) -> Value {
            self[keyPath: field] != base[keyPath: same] ? self[keyPath: field] : current[keyPath: same]
        }
        var merged = LocationDraft(
            id: id, categoryID: pick(\.categoryID, \.categoryID), name: pick(\.name, \.name), address: pick(\.address, \.address),
            description: pick(\.description, \.description), latitude: pick(\.latitude, \.latitude),
            longitude: pick(\.longitude, \.longitude), isFavorite: pick(\.isFavorite, \.isFavorite), imageURLs: current.imageURLs)
        if imageURLs != base.imageURLs {
            // The user's list in the user's order (a photo replaced by its URL keeps its place),
            // less what another device removed meanwhile, plus what it added.
            let removedElsewhere = Set(base.imageURLs).subtracting(current.imageURLs)
            let addedElsewhere = current.imageURLs.filter { !base.imageURLs.contains($0) && !imageURLs.contains($0) }
            let images = imageURLs.filter { !removedElsewhere.contains($0) } + addedElsewhere
            merged.imageURLs = images.count <= LocationRules.maxImageURLs ? images : imageURLs
        }
        merged.base = current
        return merged
    }
}
