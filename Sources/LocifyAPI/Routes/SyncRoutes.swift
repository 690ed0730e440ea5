import HTTPServer
import JSON
import Locify
import LocifyRules
import Primitives

/// The handlers of `/v1/sync/push`, `/v1/sync/changes` (openapi.yaml) and `/v1/info`.
struct SyncRoutes: Sendable {
    let services: LocifyServices
    let limits: ClientLimits
    /// Pulls with `wait`; nil when long-poll is off (`LOCIFY_MAX_WAIT_SECONDS=0`): `wait` is then
    /// accepted and ignored.
    let longPoll: LongPoll?
    /// Wakes the background workers after a category delete queued Storage clean-up (and perhaps a cascade).
    let cleanupQueued: @Sendable () -> Void
    /// The server's wall clock: the `server_time` of each push and pull answer, from which clients
    /// learn their clock's offset.
    let wallClock: WallClock

    /// Most changes one pull returns.
    static let maxPullLimit = 1000
    /// Changes one pull returns by default.
    static let defaultPullLimit = 500
    /// The largest `wait` of a pull, seconds (openapi.yaml); the server may grant less.
    static let maxWaitParameter = 60

    func register(in router: inout Router<Route>) {
        let sync = services.sync
        let cleanupQueued = self.cleanupQueued
        let wallClock = self.wallClock
        router.addAuthenticated(
            .POST, "/v1/sync/push", takesBody: true,
            decode: { request in try PushedChange.batch(json: request.jsonBody(), userID: request.userID) }
        ) { changes, caller in
            let results = try Self.push(changes, caller, sync: sync)
            if results.contains(where: \.isCategoryDelete) { cleanupQueued() }
            return .json(capacity: 64 + 400 * results.count) { writer in
                writer.beginObject()
                writer.key("results")
                writer.beginArray()
                for result in results { writer.pushResult(result, userID: caller.userID) }
                writer.endArray()
                writer.serverTime(wallClock)
                writer.endObject()
            }
        }
        let longPoll = self.longPoll
        router.addAuthenticatedWaiting(
            .GET, "/v1/sync/changes",
            decode: { (request) throws -> (limit: Int, wait: Int, since: SyncCursor?) in
                let limit = try request.query.int("limit", in: 1...Self.maxPullLimit, default: Self.defaultPullLimit)
                let wait = try request.query.int("wait", in: 0...Self.maxWaitParameter, default: 0)
                let since = try request.query.string("since").map { (text) throws(RequestDecodingError) in
                    try SyncCursor(encoded: text, userID: request.userID)
                }
                return (limit: limit, wait: wait, since: since)
            }
        ) { pull, caller in
            let read: @Sendable () throws -> FeedPage = { try sync.pull(caller, since: pull.since, limit: pull.limit) }
            let userID = caller.userID
            let render: @Sendable (FeedPage) -> HTTPResponse = { page in Self.render(page, userID: userID, serverTime: wallClock) }
            guard pull.wait > 0, let longPoll, longPoll.maxWaitSeconds > 0 else { return .response(render(try read())) }
            return try longPoll.pull(userID: userID, seconds: pull.wait, read: read, render: render)
        }
        let users = services.users
        let limits = self.limits
        router.addAuthenticated(.GET, "/v1/info") { caller in
            // The account gate runs here too: the first request of a new user provisions it.
            _ = try users.profile(caller)
            return .json { limits.write(into: &$0) }
        }
    }
}

extension SyncRoutes {
    /// `{"changes", "cursor", "has_more", "server_time"}` of one pull (`server_time` read as it is
    /// written: a long-poll's answer carries the time it was sent, not the time it was asked).
    static func render(_ page: FeedPage, userID: String, serverTime clock: WallClock) -> HTTPResponse {
        .json(capacity: 128 + 400 * page.changes.count) { writer in
            writer.beginObject()
            writer.key("changes")
            writer.beginArray()
            for change in page.changes { writer.feedChange(change, userID: userID) }
            writer.endArray()
            writer.key("cursor")
            writer.string(page.cursor.encoded(for: userID))
            writer.key("has_more")
            writer.bool(page.hasMore)
            writer.serverTime(clock)
            writer.endObject()
        }
    }
}

/// The result of one pushed change, in the order the changes were sent: what the domain made of
/// it, or why it could not be read; with the raw `type` and `id` it echoes.
struct PushResult: Sendable {
    var type: String?
    var id: String?
    var outcome: Result<PushOutcome, RequestDecodingError>

    /// An applied category delete, which may have queued Storage clean-up jobs.
    fileprivate var isCategoryDelete: Bool {
        if case .success(.applied(.tombstone(.category, _, _))) = outcome { return true }
        return false
    }
}

extension SyncRoutes {
    /// Applies the changes that could be read (the domain's push, in one call: its order groups,
    /// its batch limit and its account gate see the whole batch) and answers every change in the
    /// order sent.
    static func push(_ changes: [PushedChange], _ caller: Caller, sync: SyncService) throws -> [PushResult] {
        let outcomes = try sync.push(caller, changes.map { try? $0.change.get() })
        var next = outcomes.startIndex
        return changes.map { pushed in
            let outcome = pushed.change.map { _ in
                defer { next += 1 }
                return outcomes[next]
            }
            return PushResult(type: pushed.type, id: pushed.id, outcome: outcome)
        }
    }
}

/// The limits a client must respect, reported by `GET /v1/info` (openapi.yaml).
struct ClientLimits: Sendable {
    var maxPushChanges: Int
    var maxBodyBytes: Int
    var tombstoneRetentionSeconds: Int
    /// The longest wait of a pull the server grants (0: long-poll off).
    var maxWaitSeconds: Int

    func write(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("max_push_changes")
        writer.int(maxPushChanges)
        writer.key("max_page_size")
        writer.int(PageRequest.maxSize)
        writer.key("max_pull_limit")
        writer.int(SyncRoutes.maxPullLimit)
        writer.key("max_body_bytes")
        writer.int(maxBodyBytes)
        writer.key("tombstone_retention_seconds")
        writer.int(tombstoneRetentionSeconds)
        writer.key("max_wait_seconds")
        writer.int(maxWaitSeconds)
        writer.endObject()
    }
}

extension JSONWriter {
    /// `"server_time"`: the server's clock now, in milliseconds like every timestamp. A client
    /// learns its own clock's offset from it (the `Date` header has only seconds).
    mutating func serverTime(_ clock: WallClock) {
        key("server_time")
        timestamp(clock.now())
    }

    /// `{"type", "action": "upsert" | "delete", "id", "data", "field_updated_at"?, "deleted_at"?}`:
    /// an upsert carries each field's stamp (issue 36), so a device can decide its pending patches
    /// on top of what it pulls.
    mutating func feedChange(_ change: RecordState, userID: String) {
        beginObject()
        key("type")
        string(change.kind.wireName)
        if let deletedAt = change.deletedAt {
            key("action")
            string("delete")
            key("id")
            uuid(change.id)
            key("data")
            null()
            key("deleted_at")
            timestamp(deletedAt)
        } else {
            key("action")
            string("upsert")
            key("id")
            uuid(change.id)
            key("data")
            recordState(change, userID: userID)
            fieldUpdatedAt(of: change)
        }
        endObject()
    }

    /// `"field_updated_at"` of a live record; nothing for a tombstone.
    private mutating func fieldUpdatedAt(of state: RecordState) {
        switch state {
        case .category(let category): fieldUpdatedAt(category.fieldClock)
        case .location(let location): fieldUpdatedAt(location.fieldClock)
        case .tombstone: break
        }
    }

    /// `"field_updated_at": {"<field>": <its stamp>, ...}`, every field in stamp order.
    private mutating func fieldUpdatedAt<Field: RecordField>(_ clock: FieldLastWriteWins<Field>.Clock) {
        key("field_updated_at")
        beginObject()
        for field in Field.allCases {
            key(field.wireName)
            timestamp(clock[field])
        }
        endObject()
    }

    /// `{"type", "id", "status", "data"?, "field_updated_at"?, "error"?}` of one pushed change:
    /// a live record carries its fields' stamps as in the feed, so the device that pushed decides
    /// its edits made meanwhile on top of the merged record.
    mutating func pushResult(_ result: PushResult, userID: String) {
        beginObject()
        key("type")
        string(result.type)
        key("id")
        string(result.id)
        switch result.outcome {
        case .success(.applied(let state)):
            key("status")
            string("applied")
            key("data")
            recordState(state, userID: userID)
            fieldUpdatedAt(of: state)
        case .success(.conflict(let state)):
            key("status")
            string("conflict")
            key("data")
            recordState(state, userID: userID)
            fieldUpdatedAt(of: state)
            pushError(APIError(.conflict(state)))
        case .success(.failed(let error)):
            key("status")
            string("error")
            pushError(APIError(error))
        case .failure(let error):
            key("status")
            string("error")
            pushError(APIError(error))
        }
        endObject()
    }

    private mutating func pushError(_ error: APIError) {
        key("error")
        beginObject()
        key("code")
        string(error.code.rawValue)
        key("message")
        string(error.message)
        endObject()
    }
}
