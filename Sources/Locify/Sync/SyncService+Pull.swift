import FoundationEssentials
import LocifyRules
import Postgres
import Primitives

extension SyncService {
    /// One page of the caller's change feed after `since` (or a snapshot without it), read in one
    /// REPEATABLE READ, read-only transaction with its next cursor computed inside it.
    /// - Parameters:
    ///   - since: the cursor of the previous page, decoded for the caller by the API layer (the text form is `LocifyAPI`'s).
    ///   - limit: 1-1000 changes (validated by the API layer).
    public func pull(_ caller: Caller, since start: SyncCursor?, limit: Int) throws -> FeedPage {
        try accounts.readSnapshot(caller, UserStore.feedHead(caller)) { connection, head in
            let serverNow = head.serverNow
            // Too old for the retention, issued to an earlier account under the same id (deleted
            // since; its stamps restarted, so the position means nothing now), or behind a purged
            // tombstone it has not delivered: resync from scratch.
            if let start,
                start.issuedAt < serverNow.adding(milliseconds: -retentionSeconds * 1000) || start.issuedAt < head.accountCreatedAt
                    || start.mayHaveMissed(purgedThrough: head.purgedThrough)
            {
                throw LocifyError.cursorExpired
            }
            let highWater = head.highWater
            var cursor =
                start
                ?? SyncCursor(phase: .snapshotCategories, seq: highWater, rank: 0, afterID: SyncCursor.minID, issuedAt: serverNow)
            var changes: [RecordState] = []
            let hasMore = try fill(
                &changes, cursor: &cursor, limit: limit, highWater: highWater, cascadesPending: head.cascadesPending,
                connection: connection, userID: caller.userID)
            // A cursor that has caught up stands after every stamp handed out so far (all of them
            // are committed and were read: stamps are issued under the user's lock, in commit
            // order) and is as fresh as this snapshot; one in the middle of a backlog keeps the time
            // its position was first established (retention, openapi.yaml).
            if !hasMore { cursor = .after(seq: max(highWater, cursor.seq), issuedAt: serverNow) }
            let ordered = changes.filter { $0.kind == .category } + changes.filter { $0.kind == .location }
            return FeedPage(changes: ordered, cursor: cursor, hasMore: hasMore)
        }
    }

    /// Appends up to `limit` changes from `cursor` on, advancing it; returns whether more remain.
    /// Each phase is read with one row more than it may deliver, so "more remain" is exact.
    /// `highWater` is the user's `change_seq` in this snapshot: no visible row has a later stamp.
    /// While cascades are pending (`PendingCascades`), their locations are read as the tombstones
    /// that settling them will write.
    private func fill(
        _ changes: inout [RecordState], cursor: inout SyncCursor, limit: Int, highWater: Int64, cascadesPending: Bool,
        connection: PostgresConnection, userID: String
    ) throws -> Bool {
        while true {
            let quota = limit - changes.count
            switch cursor.phase {
            case .snapshotCategories, .snapshotLocations:
                let kind: RecordKind = cursor.phase == .snapshotCategories ? .category : .location
                let rows = try FeedStore.snapshot(
                    connection, kind, userID: userID, highWater: cursor.seq, afterID: cursor.afterID, limit: quota + 1)
                let taken = rows.prefix(quota)
                changes += taken
                if rows.count > quota {
                    if let last = taken.last { cursor.afterID = last.id }
                    return true
                }
                cursor =
                    kind == .category
                    ? SyncCursor(
                        phase: .snapshotLocations, seq: cursor.seq, rank: 0, afterID: SyncCursor.minID, issuedAt: cursor.issuedAt)
                    : .after(seq: cursor.seq, issuedAt: cursor.issuedAt)
            case .delta:
                // Caught up (the common pull, and every long-poll that waits): everything up to
                // the last stamp visible here is delivered, so the tables need not be read.
                if cursor.seq > highWater || (cursor.seq == highWater && cursor.rank == 2) { return false }
                let categories = try FeedStore.delta(connection, .category, userID: userID, after: cursor, limit: quota + 1)
                let locations = try FeedStore.delta(connection, .location, userID: userID, after: cursor, limit: quota + 1)
                let pending =
                    cascadesPending
                    ? try FeedStore.pendingTombstones(connection, userID: userID, after: cursor, limit: quota + 1) : []
                let merged = (categories + locations + pending).sorted { a, b in
                    if a.stamp != b.stamp { return a.stamp < b.stamp }
                    if a.state.kind != b.state.kind { return a.state.kind < b.state.kind }
                    return a.state.id.precedes(b.state.id)
                }
                let taken = merged.prefix(quota)
                changes += taken.map(\.state)
                if let last = taken.last {
                    cursor = SyncCursor(
                        phase: .delta, seq: last.stamp, rank: last.state.kind.rawValue, afterID: last.state.id,
                        issuedAt: cursor.issuedAt)
                }
                return merged.count > quota
            }
        }
    }
}

extension UUID {
    /// PostgreSQL's uuid order (bytewise), so merged pages agree with `ORDER BY id`.
    func precedes(_ other: UUID) -> Bool {
        withUnsafeBytes(of: uuid) { a in
            withUnsafeBytes(of: other.uuid) { b in
                a.lexicographicallyPrecedes(b)
            }
        }
    }
}
