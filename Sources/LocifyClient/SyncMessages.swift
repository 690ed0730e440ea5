import Foundation

/// The server's verdict on one pushed change, in the order the changes were sent.
public struct PushResult: Decodable, Sendable, Hashable {
    /// `applied` (or replayed), `conflict` (lost to a newer server version) or `error`; a status
    /// this version does not know is kept as sent (the engine reports it and leaves the change queued).
    public enum Status: Decodable, Sendable, Hashable {
        case applied, conflict, error
        case unknown(String)

        /// Decodes the status string.
        public init(from decoder: any Decoder) throws {
            let text = try decoder.singleValueContainer().decode(String.self)
            switch text {
            case "applied": self = .applied
            case "conflict": self = .conflict
            case "error": self = .error
            default: self = .unknown(text)
            }
        }
    }

    /// The change's `type` as sent.
    public var kind: RecordKind?
    /// The change's `data.id`.
    public var id: UUID?
    /// Whether the change was applied, lost a conflict or was refused.
    public var status: Status
    /// For `applied`, the record after the change (a tombstone for a delete); for `conflict`,
    /// the server's version.
    public var record: RecordState?
    /// For `conflict` (E008, with the server's record) and `error`.
    public var error: LocifyError?
    /// When each field of `record` was last written (`field_updated_at`, by field), when the
    /// server sends it (issue 36).
    var fieldUpdatedAt: [String: Date]?

    enum CodingKeys: String, CodingKey {
        case type, id, status, data, error
        case fieldUpdatedAt = "field_updated_at"
    }

    /// The result of a change the server refused with the whole request (a batch of one).
    init(refused change: PushChange, _ error: LocifyError) {
        kind = change.kind
        id = change.recordID
        status = .error
        record = nil
        self.error = error
    }

    /// Decodes one entry of the push response's `results`; `data` is read as a record of `type`
    /// (none without `type`), `error` with the E008 record attached for a conflict.
    public init(from decoder: any Decoder) throws {
        struct ErrorBody: Decodable {
            var code: String
            var message: String
        }
        let container = try decoder.container(keyedBy: CodingKeys.self)
        kind = try? container.decodeIfPresent(RecordKind.self, forKey: .type)
        id = try? container.decodeIfPresent(UUID.self, forKey: .id)
        status = try container.decode(Status.self, forKey: .status)
        switch kind {
        case .category?: record = try container.decodeIfPresent(CategoryOrTombstone.self, forKey: .data)?.state
        case .location?: record = try container.decodeIfPresent(LocationOrTombstone.self, forKey: .data)?.state
        case nil: record = nil
        }
        fieldUpdatedAt = try? container.decodeIfPresent([String: Date].self, forKey: .fieldUpdatedAt)
        if let body = try container.decodeIfPresent(ErrorBody.self, forKey: .error) {
            error = LocifyError(ServerError(status: 0, code: body.code, message: body.message), conflictRecord: record)
        }
    }
}

/// One entry of the change feed (`GET /v1/sync/changes`): the record's current state, or its
/// deletion.
public enum FeedChange: Decodable, Sendable, Hashable {
    case upsert(RecordState)
    case delete(RecordKind, Tombstone)
    /// A record type or action this version does not know (a newer server): reported and skipped.
    case unrecognized(type: String, action: String)

    /// Whether the change is about a category or a location (nil for an unrecognized one).
    public var kind: RecordKind? {
        switch self {
        case .upsert(let state): return state.kind
        case .delete(let kind, _): return kind
        case .unrecognized: return nil
        }
    }

    /// The id of the record changed or deleted (nil for an unrecognized one).
    public var id: UUID? {
        switch self {
        case .upsert(let state): return state.id
        case .delete(_, let tombstone): return tombstone.id
        case .unrecognized: return nil
        }
    }

    enum CodingKeys: String, CodingKey {
        case type, action, id, data
        case deletedAt = "deleted_at"
    }

    /// Decodes `{"type", "action", "id", "data", "deleted_at"}`: the record from `data` for an
    /// `upsert`, a tombstone from `id` and `deleted_at` for a `delete`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let type = try container.decode(String.self, forKey: .type)
        let action = try container.decode(String.self, forKey: .action)
        guard let kind = RecordKind(rawValue: type), action == "delete" || action == "upsert" else {
            self = .unrecognized(type: type, action: action)
            return
        }
        if action == "delete" {
            self = .delete(
                kind,
                Tombstone(
                    id: try container.decode(UUID.self, forKey: .id),
                    deletedAt: try container.decode(Date.self, forKey: .deletedAt)))
            return
        }
        switch kind {
        case .category: self = .upsert(.category(try container.decode(Category.self, forKey: .data)))
        case .location: self = .upsert(.location(try container.decode(Location.self, forKey: .data)))
        }
    }
}

/// One page of the change feed.
public struct FeedPage: Decodable, Sendable, Hashable {
    /// The changes of this page, in feed order (empty when nothing changed).
    public var changes: [FeedChange]
    /// Opaque: pass it back as `since`.
    public var cursor: String
    /// True exactly when more changes remain after this page.
    public var hasMore: Bool
    /// The server's clock when it answered (`server_time`; nil from a server without it): the
    /// engine learns its clock's offset from it.
    public var serverTime: Date?
    /// `serverTime` with the device's times of the request and the answer, set by the engine.
    var timeSample: ServerTimeSample?
    /// Each change's `field_updated_at` (issue 36: when each field of an upserted record was last
    /// written), aligned with `changes`; nil where the server sent none.
    var fieldUpdatedAt: [[String: Date]?] = []

    enum CodingKeys: String, CodingKey {
        case changes, cursor
        case hasMore = "has_more"
        case serverTime = "server_time"
    }

    /// One entry of `changes`: the change, and its record's field stamps.
    private struct Entry: Decodable {
        var change: FeedChange
        var fieldUpdatedAt: [String: Date]?

        enum CodingKeys: String, CodingKey {
            case fieldUpdatedAt = "field_updated_at"
        }

        init(from decoder: any Decoder) throws {
            change = try FeedChange(from: decoder)
            fieldUpdatedAt = try decoder.container(keyedBy: CodingKeys.self).decodeIfPresent([String: Date].self, forKey: .fieldUpdatedAt)
        }
    }

    /// Decodes `{"changes", "cursor", "has_more", "server_time"}`, each change with its `field_updated_at`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let entries = try container.decode([Entry].self, forKey: .changes)
        changes = entries.map(\.change)
        fieldUpdatedAt = entries.map(\.fieldUpdatedAt)
        cursor = try container.decode(String.self, forKey: .cursor)
        hasMore = try container.decode(Bool.self, forKey: .hasMore)
        serverTime = try container.decodeIfPresent(Date.self, forKey: .serverTime)
    }

    /// The field stamps of change `index` (nil when the server sent none).
    func fieldUpdatedAt(ofChange index: Int) -> [String: Date]? {
        fieldUpdatedAt.indices.contains(index) ? fieldUpdatedAt[index] : nil
    }
}
