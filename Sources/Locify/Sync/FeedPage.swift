import FoundationEssentials

/// One page of a user's change feed (openapi.yaml, pull).
public struct FeedPage: Sendable {
    /// Upserts (live records) and deletes (tombstones); all categories before all locations.
    public var changes: [RecordState]
    /// Where the next page starts: passed back as `since`, encoded for the user (opaque to
    /// clients: `SyncCursor.encoded(for:)`).
    public var cursor: SyncCursor
    /// True exactly when more changes remain after this page.
    public var hasMore: Bool
}

extension RecordState {
    /// Which kind of record this is.
    public var kind: RecordKind {
        switch self {
        case .category: return .category
        case .location: return .location
        case .tombstone(let kind, _, _): return kind
        }
    }
}

extension RecordState {
    /// The record's id.
    public var id: UUID {
        switch self {
        case .category(let category): return category.id
        case .location(let location): return location.id
        case .tombstone(_, let id, _): return id
        }
    }
}
