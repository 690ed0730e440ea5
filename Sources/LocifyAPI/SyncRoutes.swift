import HTTPServer
import JSON
import Locify

/// The handlers of `/v1/sync/push`, `/v1/sync/changes` (openapi.yaml) and `/v1/info`.
struct SyncRoutes: Sendable {
    let services: LocifyServices
    let limits: ClientLimits
    /// Wakes the clean-up worker after a category delete queued Storage clean-up.
    let cleanupQueued: @Sendable () -> Void

    /// Most changes one pull returns.
    static let maxPullLimit = 1000
    /// Changes one pull returns by default.
    static let defaultPullLimit = 500

    func register(in router: inout Router<Route>) {
        let sync = services.sync
        let cleanupQueued = self.cleanupQueued
        router.addAuthenticated(.POST, "/v1/sync/push") { request in
            let batch = try decoding { PushChange.batch(json: try request.request.jsonBody(), userID: request.userID) }
            let results = try sync.push(request.caller, batch)
            if results.contains(where: \.isCategoryDelete) { cleanupQueued() }
            return .json(capacity: 64 + 400 * results.count) { writer in
                writer.beginObject()
                writer.key("results")
                writer.beginArray()
                for result in results { writer.pushResult(result, userID: request.userID) }
                writer.endArray()
                writer.endObject()
            }
        }
        router.addAuthenticated(.GET, "/v1/sync/changes") { request in
            let limit = try decoding { try request.query.int("limit", in: 1...Self.maxPullLimit, default: Self.defaultPullLimit) }
            let page = try sync.pull(request.caller, since: request.query.string("since"), limit: limit)
            return .json(capacity: 128 + 400 * page.changes.count) { writer in
                writer.beginObject()
                writer.key("changes")
                writer.beginArray()
                for change in page.changes { writer.feedChange(change, userID: request.userID) }
                writer.endArray()
                writer.key("cursor")
                writer.string(page.cursor)
                writer.key("has_more")
                writer.bool(page.hasMore)
                writer.endObject()
            }
        }
        let users = services.users
        let limits = self.limits
        router.addAuthenticated(.GET, "/v1/info") { request in
            // The account gate runs here too: the first request of a new user provisions it.
            _ = try users.profile(request.caller)
            return .json { limits.write(into: &$0) }
        }
    }
}

extension PushResult {
    /// An applied category delete, which may have queued Storage clean-up jobs.
    fileprivate var isCategoryDelete: Bool {
        if case .applied(.tombstone(.category, _, _)) = outcome { return true }
        return false
    }
}

/// The limits a client must respect, reported by `GET /v1/info` (openapi.yaml).
struct ClientLimits: Sendable {
    var maxPushChanges: Int
    var maxBodyBytes: Int
    var tombstoneRetentionSeconds: Int

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
        writer.endObject()
    }
}

extension JSONWriter {
    /// `{"type", "action": "upsert" | "delete", "id", "data", "deleted_at"?}`.
    mutating func feedChange(_ change: RecordState, userID: String) {
        beginObject()
        key("type")
        string(change.kind.name)
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
        }
        endObject()
    }

    /// `{"type", "id", "status", "data"?, "error"?}` of one pushed change.
    mutating func pushResult(_ result: PushResult, userID: String) {
        beginObject()
        key("type")
        string(result.type)
        key("id")
        string(result.id)
        switch result.outcome {
        case .applied(let state):
            key("status")
            string("applied")
            key("data")
            recordState(state, userID: userID)
        case .conflict(let state):
            key("status")
            string("conflict")
            key("data")
            recordState(state, userID: userID)
            pushError(APIError(.conflict(state)))
        case .failed(let error):
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
