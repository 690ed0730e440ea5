import Foundation

/// An offline-first copy of the user's categories and locations, kept in a ``LocalStore`` and
/// reconciled with the server by ``sync()``.
///
/// Edits apply locally at once and are queued in an outbox, stamped with the device's clock
/// (never earlier than 1 ms after the record's last known time, so an edit made after seeing a
/// record wins over it even when this device's clock is behind). ``sync()`` pushes the outbox in
/// batches of at most `/v1/info`'s `max_push_changes`, then follows the change feed to its end.
/// Conflicts are settled by the server's last-write-wins rule; the engine adopts the server's
/// record when a local change loses (E008), rebuilds the copy from a snapshot when the cursor
/// expired (E009) without losing unsynced changes, and replays a batch whose answer was lost.
///
/// An actor: every method runs off the caller's thread, and edits may be made while a sync runs.
public actor SyncEngine {
    /// The API the engine talks to.
    public let api: LocifyAPIClient
    private let store: any LocalStore
    private let clock: @Sendable () -> Date
    /// Changes per pull request (1-1000; default 500).
    public var pullLimit = 500

    private var snapshot: LocalSnapshot?
    private var inFlight: Set<Int64> = []
    private var isSyncing = false
    private var syncWaiters: [CheckedContinuation<Void, Never>] = []
    private var subscribers: [UUID: AsyncStream<SyncEvent>.Continuation] = [:]
    private var commitTail: Task<Void, any Error>?
    private var info: ServerInfo?
    /// The latest time this engine stamped an edit with: each new edit gets a later one.
    private var lastStamp: Int64 = .min

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

    // MARK: Events

    /// A new stream of what the engine does while syncing. Each call makes its own stream; it ends
    /// when the consumer stops iterating.
    public func events() -> AsyncStream<SyncEvent> {
        let id = UUID()
        let (stream, continuation) = AsyncStream<SyncEvent>.makeStream(bufferingPolicy: .bufferingNewest(1000))
        subscribers[id] = continuation
        continuation.onTermination = { [weak self] _ in
            Task { await self?.unsubscribe(id) }
        }
        return stream
    }

    private func unsubscribe(_ id: UUID) {
        subscribers[id] = nil
    }

    private func emit(_ event: SyncEvent) {
        for continuation in subscribers.values { continuation.yield(event) }
    }

    // MARK: Reading

    /// The live categories, by name (case-insensitive) then id, with `locationCount` counted
    /// from the local copy.
    public func categories() async throws -> [Category] {
        let state = try await loaded()
        var counts: [UUID: Int] = [:]
        for location in state.locations.values { counts[location.categoryID, default: 0] += 1 }
        return state.categories.values.map { category in
            var category = category
            category.locationCount = counts[category.id] ?? 0
            return category
        }
        .sorted { ($0.name.lowercased(), $0.id.uuidString) < ($1.name.lowercased(), $1.id.uuidString) }
    }

    /// The live locations (of one category, if given), newest first.
    public func locations(in categoryID: UUID? = nil) async throws -> [Location] {
        try await loaded().locations.values
            .filter { categoryID == nil || $0.categoryID == categoryID }
            .sorted { ($0.createdAt, $0.id.uuidString) > ($1.createdAt, $1.id.uuidString) }
    }

    /// One category of the local copy (nil when there is none, or it was deleted).
    public func category(id: UUID) async throws -> Category? {
        try await loaded().categories[id]
    }

    /// One location of the local copy.
    public func location(id: UUID) async throws -> Location? {
        try await loaded().locations[id]
    }

    /// Local changes the server has not acknowledged yet, in the order they were made.
    public func pendingChanges() async throws -> [OutboxEntry] {
        try await loaded().outbox
    }

    /// The whole local state (records, outbox, cursor).
    public func localSnapshot() async throws -> LocalSnapshot {
        try await loaded()
    }

    // MARK: Editing

    /// Creates or edits a category locally and queues the change.
    /// - Returns: the record as stored locally.
    @discardableResult
    public func saveCategory(id: UUID = UUID(), name: String, icon: String? = nil) async throws -> Category {
        let name = name.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !name.isEmpty else { throw Self.localError(400, "E001", "name must not be empty") }
        var transaction = StoreTransaction(try await loaded())
        let existing = transaction.snapshot.categories[id]
        let at = stamp(after: existing?.updatedAt)
        var category = existing ?? Category(id: id, name: name, icon: icon, createdAt: at, updatedAt: at)
        category.name = name
        category.icon = icon
        category.updatedAt = at
        transaction.upsert(category)
        let write = CategoryWrite(id: id, name: name, icon: icon, updatedAt: at)
        transaction.enqueue(existing == nil ? .createCategory(write) : .updateCategory(write), inFlight: inFlight)
        try await commit(transaction)
        return category
    }

    /// Creates or edits a location locally (its category must exist locally) and queues the change.
    /// - Returns: the record as stored locally.
    @discardableResult
    public func saveLocation(_ draft: LocationDraft) async throws -> Location {
        let name = draft.name.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !name.isEmpty else { throw Self.localError(400, "E001", "name must not be empty") }
        guard (-90...90).contains(draft.latitude), (-180...180).contains(draft.longitude) else {
            throw Self.localError(400, "E003", "coordinates out of range")
        }
        var transaction = StoreTransaction(try await loaded())
        guard transaction.snapshot.categories[draft.categoryID] != nil else {
            throw Self.localError(404, "E007", "category not found")
        }
        let existing = transaction.snapshot.locations[draft.id]
        let at = stamp(after: existing?.updatedAt)
        let write = LocationWrite(
            id: draft.id, categoryID: draft.categoryID, name: name, address: draft.address,
            description: draft.description, latitude: draft.latitude, longitude: draft.longitude,
            isFavorite: draft.isFavorite, imageURLs: draft.imageURLs, updatedAt: at
        ).normalized
        var location =
            existing
            ?? Location(id: draft.id, categoryID: draft.categoryID, name: name, latitude: 0, longitude: 0, createdAt: at, updatedAt: at)
        location.categoryID = write.categoryID
        location.name = write.name
        location.address = write.address
        location.description = write.description
        location.latitude = write.latitude
        location.longitude = write.longitude
        location.isFavorite = write.isFavorite
        location.imageURLs = write.imageURLs
        location.updatedAt = at
        transaction.upsert(location)
        var stamped = write
        stamped.updatedAt = at
        transaction.enqueue(existing == nil ? .createLocation(stamped) : .updateLocation(stamped), inFlight: inFlight)
        try await commit(transaction)
        return location
    }

    /// Deletes a location locally and queues the delete.
    /// - Returns: the deletion's time (its `deleted_at` once the server applies it).
    @discardableResult
    public func deleteLocation(id: UUID) async throws -> Date {
        var transaction = StoreTransaction(try await loaded())
        guard let existing = transaction.snapshot.locations[id] else {
            throw Self.localError(404, "E007", "location not found")
        }
        let at = stamp(after: existing.updatedAt)
        transaction.removeLocation(id)
        transaction.enqueue(.deleteLocation(DeleteWrite(id: id, updatedAt: at)), inFlight: inFlight)
        try await commit(transaction)
        return at
    }

    /// Deletes a category locally with its locations, or moving them to `reassignTo`, and queues
    /// the delete. If the server keeps the category (a newer edit elsewhere), the locations come back.
    /// - Returns: the deletion's time.
    @discardableResult
    public func deleteCategory(id: UUID, reassignTo: UUID? = nil) async throws -> Date {
        var transaction = StoreTransaction(try await loaded())
        guard let existing = transaction.snapshot.categories[id] else {
            throw Self.localError(404, "E007", "category not found")
        }
        if let reassignTo {
            guard reassignTo != id else {
                throw Self.localError(400, "E001", "reassign_category_id must not be the category being deleted")
            }
            guard transaction.snapshot.categories[reassignTo] != nil else {
                throw Self.localError(404, "E007", "category not found")
            }
        }
        let at = stamp(after: existing.updatedAt)
        let displaced = transaction.snapshot.locations.values.filter { $0.categoryID == id }
            .sorted { $0.id.uuidString < $1.id.uuidString }
        transaction.removeCategory(id)
        for location in displaced {
            if let reassignTo {
                transaction.upsert(location.moved(to: reassignTo, at: at))
            } else {
                transaction.removeLocation(location.id)
            }
        }
        transaction.enqueue(
            .deleteCategory(DeleteWrite(id: id, updatedAt: at, reassignCategoryID: reassignTo)), displaced: displaced,
            inFlight: inFlight)
        try await commit(transaction)
        return at
    }

    // MARK: Sync

    /// Pushes every pending change, then pulls the change feed to its end. Calls made while a
    /// sync runs wait for it and then sync again. Throws (and leaves unacknowledged changes
    /// queued) on network and server failures; cancelling the calling task stops it between
    /// requests or aborts the request in flight (``LocifyError/cancelled``).
    @discardableResult
    public func sync() async throws -> SyncReport {
        await acquireSyncTurn()
        defer { releaseSyncTurn() }
        emit(.started)
        var report = SyncReport()
        do {
            let limits = try await serverInfo()
            try await pushAll(limit: limits.maxPushChanges, report: &report)
            try await pullAll(report: &report)
            emit(.finished(report))
            return report
        } catch {
            let failure = Self.locifyError(error)
            emit(.failed(failure))
            throw failure
        }
    }

    private func serverInfo() async throws -> ServerInfo {
        if let info { return info }
        let fetched = try await patiently { try await self.api.info() }
        info = fetched
        return fetched
    }

    private func pushAll(limit: Int, report: inout SyncReport) async throws {
        while true {
            try Self.checkCancellation()
            let batch = Outbox.nextBatch(try await loaded().outbox, limit: max(limit, 1), inFlight: inFlight)
            if batch.isEmpty { return }
            let ids = Set(batch.map(\.id))
            inFlight.formUnion(ids)
            let results: [PushResult]
            do {
                results = try await patiently { try await self.api.push(batch.map(\.change)) }
            } catch {
                inFlight.subtract(ids)
                throw error
            }
            do {
                try await apply(results, of: batch, report: &report)
                inFlight.subtract(ids)
            } catch {
                inFlight.subtract(ids)
                throw error
            }
        }
    }

    /// Takes in one batch's results. Records of refused changes are read back first (so that
    /// the whole batch is settled in one commit; if a read fails the batch stays queued and is
    /// replayed, which is safe).
    private func apply(_ results: [PushResult], of batch: [OutboxEntry], report: inout SyncReport) async throws {
        var serverStates: [RecordKey: RecordState?] = [:]
        for (entry, result) in zip(batch, results) where result.status == .error {
            serverStates[entry.key] = try await read(entry.key)
            if let target = entry.reassignTarget {
                serverStates[RecordKey(kind: .category, id: target)] = try await read(RecordKey(kind: .category, id: target))
            }
        }
        var transaction = StoreTransaction(try await loaded())
        var counts = (applied: 0, conflicts: 0, rejected: 0)
        for (sent, result) in zip(batch, results) {
            // The entry as it is now: results earlier in the batch (and pulls since it was sent)
            // may have updated what a category delete would give back.
            let entry = transaction.snapshot.outbox.first { $0.id == sent.id } ?? sent
            transaction.removeOutbox(entry.id)
            switch result.status {
            case .applied:
                counts.applied += 1
                if let record = result.record { transaction.adopt(record) }
            case .conflict:
                counts.conflicts += 1
                if entry.isCategoryDelete { transaction.restore(entry) }
                if let record = result.record {
                    transaction.adopt(record)
                    transaction.events.append(.conflictResolved(record))
                }
            case .error:
                counts.rejected += 1
                // A refused category delete gives back what it removed only if the server still
                // has the category (E007 on a reassign target); one the server never had
                // (created and deleted before a push) takes its locations with it.
                if entry.isCategoryDelete, case .category? = serverStates[entry.key] ?? nil { transaction.restore(entry) }
                let error = result.error ?? .unexpectedResponse(status: 200, body: "error result without error")
                transaction.events.append(.changeRejected(entry.change, error))
                var keys = [entry.key]
                if let target = entry.reassignTarget { keys.append(RecordKey(kind: .category, id: target)) }
                for key in keys {
                    guard let state = serverStates[key] else { continue }
                    if let state {
                        transaction.adopt(state)
                    } else if transaction.pending(key).isEmpty {
                        if key.kind == .category {
                            transaction.removeCategory(key.id)
                        } else {
                            transaction.forgetDisplaced(key.id)
                            transaction.removeLocation(key.id)
                        }
                    }
                }
            }
        }
        try await commit(transaction)
        report.pushed += batch.count
        report.applied += counts.applied
        report.conflicts += counts.conflicts
        report.rejected += counts.rejected
        emit(.pushed(changes: batch.count, applied: counts.applied, conflicts: counts.conflicts, rejected: counts.rejected))
        for event in transaction.events { emit(event) }
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

    private func pullAll(report: inout SyncReport) async throws {
        var cursor = try await loaded().cursor
        while true {
            try Self.checkCancellation()
            let page: FeedPage
            do {
                page = try await patiently { try await self.api.pull(since: cursor, limit: self.pullLimit) }
            } catch LocifyError.cursorExpired {
                guard cursor != nil else { throw LocifyError.unexpectedResponse(status: 410, body: "E009 without a cursor") }
                emit(.resyncStarted)
                report.resynced = true
                cursor = nil
                continue
            }
            var transaction = StoreTransaction(try await loaded())
            if cursor == nil { transaction.forgetSyncedRecords() }
            for change in page.changes {
                switch change {
                case .upsert(let state): transaction.adopt(state, inFlight: inFlight)
                case .delete(let kind, let tombstone): transaction.adopt(.tombstone(kind, tombstone), inFlight: inFlight)
                }
            }
            transaction.setCursor(page.cursor)
            try await commit(transaction)
            report.pulled += page.changes.count
            for event in transaction.events { emit(event) }
            emit(.pulled(changes: page.changes.count, hasMore: page.hasMore))
            cursor = page.cursor
            if !page.hasMore { return }
        }
    }

    // MARK: Plumbing

    /// Longest `Retry-After` (seconds) the engine waits out by itself on S001 or S003; longer
    /// ones fail the sync (default 5, 0 never waits).
    public var maxRetryAfter = 5

    /// Sets ``maxRetryAfter``.
    public func setMaxRetryAfter(_ seconds: Int) {
        maxRetryAfter = max(seconds, 0)
    }

    /// Runs `request`, waiting out a short `Retry-After` of S001 (rate limited) or S003
    /// (unavailable) up to three times. The wait ends early when the task is cancelled.
    private func patiently<Result: Sendable>(_ request: () async throws -> Result) async throws -> Result {
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

    private func loaded() async throws -> LocalSnapshot {
        if let snapshot { return snapshot }
        let loaded = try await store.load()
        if let snapshot { return snapshot }  // another call loaded it meanwhile
        snapshot = loaded
        // Edits after a relaunch are stamped after the ones still queued.
        if let latest = loaded.outbox.compactMap({ $0.change.updatedAt?.locifyMilliseconds }).max() {
            lastStamp = max(lastStamp, latest)
        }
        return loaded
    }

    /// Makes `transaction` the current state and commits it to the store; commits reach the
    /// store in the order they were made. If the store fails, the state is read back from it.
    private func commit(_ transaction: StoreTransaction) async throws {
        snapshot = transaction.snapshot
        let changes = transaction.changes
        if changes.isEmpty { return }
        let previous = commitTail
        let store = self.store
        let task = Task {
            _ = await previous?.result
            try await store.commit(changes)
        }
        commitTail = task
        do {
            try await task.value
        } catch {
            snapshot = nil
            throw error
        }
    }

    /// The device's time for a new edit of a record last stamped `previous`: never earlier than
    /// 1 ms after it, and after every earlier edit of this engine (so that a device's later edit
    /// always wins over its earlier one, even when its copy went back to an older server version
    /// after a refused change).
    private func stamp(after previous: Date?) -> Date {
        var milliseconds = clock().locifyMilliseconds
        if let previous { milliseconds = max(milliseconds, previous.locifyMilliseconds + 1) }
        if lastStamp != .min { milliseconds = max(milliseconds, lastStamp + 1) }
        lastStamp = milliseconds
        return Date(locifyMilliseconds: milliseconds)
    }

    private func acquireSyncTurn() async {
        while isSyncing {
            await withCheckedContinuation { syncWaiters.append($0) }
        }
        isSyncing = true
    }

    private func releaseSyncTurn() {
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

    /// The error the server would give, for an edit refused before it leaves the device.
    static func localError(_ status: Int, _ code: String, _ message: String) -> LocifyError {
        LocifyError(ServerError(status: status, code: code, message: message))
    }
}

/// A location as the app edits it (the engine stamps the time and keeps the server's fields).
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
    /// At most 10 distinct absolute `https` URLs.
    public var imageURLs: [String]

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

    /// The draft of an existing location, to edit and save back.
    public init(_ location: Location) {
        self.init(
            id: location.id, categoryID: location.categoryID, name: location.name, address: location.address,
            description: location.description, latitude: location.latitude, longitude: location.longitude,
            isFavorite: location.isFavorite, imageURLs: location.imageURLs)
    }
}
