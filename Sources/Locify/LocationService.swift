import Foundation
import Postgres
import Primitives

/// Locations: listing with filters and sorts, reads, last-write-wins writes and deletes
/// (openapi.yaml). Every write is one transaction under the user's write lock.
public struct LocationService: Sendable {
    let pool: ConnectionPool
    let now: @Sendable () -> Timestamp
    /// Where deep pages of each listing start (see `listDeep`).
    let boundaries = PageBoundaries()

    /// One page of the caller's live locations, filtered, searched and sorted as `query` says, with
    /// the exact total; deep pages start from a remembered boundary (`listDeep`).
    public func list(_ caller: Caller, _ query: LocationQuery) throws -> Page<Location> {
        if query.search == nil && query.page.offset >= LocationStore.deepOffset && query.page.offset < Int64.max {
            return try listDeep(caller, query)
        }
        let read = { (connection: PostgresConnection) throws -> Page<Location> in
            try AccountGate.read(connection, caller, LocationStore.listQuery(userID: caller.userID, query), now: now) { rows in
                var records: [Location] = []
                records.reserveCapacity(rows.count)
                for row in rows where !row.isNull(2) {
                    records.append(try Location(row: row, at: 2))
                }
                let total: Int64 = try rows.first?.decode(1) ?? 0
                return Page(records: records, totalCount: total, page: query.page.page, size: query.page.size)
            }
        }
        guard query.search != nil else { return try pool.withConnection(read) }
        // A search counts the user's matches, so its best plan depends on the user's size (an index
        // scan of their rows, or a table scan for a user who owns most of it). The sessions'
        // generic plans cannot tell users apart; this statement is planned for its values.
        return try pool.withTransaction { connection in
            try connection.execute(unsafeSQL: "SET LOCAL plan_cache_mode = force_custom_plan")
            return try read(connection)
        }
    }

    /// A deep page: read after the nearest remembered boundary at or before its offset when there
    /// is one and the user's records have not changed since (the statement checks it in its own
    /// snapshot), else with OFFSET; either way the page's first and last rows are remembered. So
    /// the cost of OFFSET is paid once per listing and change of the user's records, not on every
    /// request (bench/RESULTS.md, "Deep pages").
    private func listDeep(_ caller: Caller, _ query: LocationQuery) throws -> Page<Location> {
        let key = PageBoundaries.Key(
            userID: caller.userID, sort: query.sort, categoryID: query.categoryID, isFavorite: query.isFavorite)
        let offset = query.page.offset
        if let start = boundaries.start(key, at: offset) {
            let (page, stamp) = try readDeep(caller, query, .from(start))
            // A fresh stamp with an empty page that should not be empty would mean the boundary row
            // is gone, which no write can do without changing the stamp; read by offset then too.
            if stamp == start.stamp && (!page.records.isEmpty || page.totalCount <= offset) {
                boundaries.remember(key, stamp: stamp, offset: offset, ids: page.records.map(\.id))
                return page
            }
            boundaries.forget(key)
        }
        let (page, stamp) = try readDeep(caller, query, .byOffset)
        boundaries.remember(key, stamp: stamp, offset: offset, ids: page.records.map(\.id))
        return page
    }

    private func readDeep(
        _ caller: Caller, _ query: LocationQuery, _ deep: LocationStore.DeepRead
    ) throws -> (Page<Location>, PageBoundaries.Stamp) {
        try pool.withConnection { connection in
            try AccountGate.read(connection, caller, LocationStore.listQuery(userID: caller.userID, query, deep: deep), now: now) { rows in
                var records: [Location] = []
                records.reserveCapacity(rows.count)
                for row in rows where !row.isNull(4) {
                    records.append(try Location(row: row, at: 4))
                }
                let first = rows.first
                let stamp = PageBoundaries.Stamp(changeSeq: try first?.decode(2) ?? -1, account: try first?.decode(3) ?? -1)
                let total: Int64 = try first?.decode(1) ?? 0
                return (Page(records: records, totalCount: total, page: query.page.page, size: query.page.size), stamp)
            }
        }
    }

    /// The caller's live location `id`; E007 when it is unknown, deleted or another user's.
    public func get(_ caller: Caller, id: UUID) throws -> Location {
        let found = try pool.withConnection { connection in
            try AccountGate.read(connection, caller, LocationStore.getQuery(userID: caller.userID, id: id), now: now) { rows in
                try rows.first.flatMap { row throws(PostgresError) in row.isNull(1) ? nil : try Location(row: row, at: 1) }
            }
        }
        guard let found else { throw LocifyError.notFound("location") }
        return found
    }

    /// POST: creates the location, or upserts it under last-write-wins when the id exists.
    public func create(_ caller: Caller, _ draft: LocationDraft) throws -> WriteOutcome<Location> {
        try write(caller, draft, .create)
    }

    /// PUT: replaces an existing location (or revives its tombstone when newer); unknown id E007.
    public func replace(_ caller: Caller, _ draft: LocationDraft) throws -> WriteOutcome<Location> {
        try write(caller, draft, .replace)
    }

    private func write(_ caller: Caller, _ draft: LocationDraft, _ intent: LastWriteWins.Intent) throws -> WriteOutcome<Location> {
        if intent == .create, let created = try createFast(caller, draft) { return .created(created) }
        do {
            return try writeInTransaction(caller, draft, intent)
        } catch {
            throw CategoryGuard.mapping(error)
        }
    }

    private func writeInTransaction(
        _ caller: Caller, _ draft: LocationDraft, _ intent: LastWriteWins.Intent
    ) throws -> WriteOutcome<Location> {
        try pool.withTransaction { connection in
            let stamp = try AccountGate.beginWrite(connection, caller, now: now)
            let stored = try LocationStore.find(connection, userID: caller.userID, id: draft.id)
            let now = self.now()
            let decision = LastWriteWins.decide(
                intent, stored: stored?.clock, requested: draft.updatedAt,
                sameContent: stored.map(draft.hasSameContent) ?? false, now: now)
            // The category must be one of the user's live categories: the schema's trigger checks
            // it in the same statement (SQLSTATE LC001, E007 through `CategoryGuard`).
            return try decision.applyWrite(
                stored: stored, kind: "location", conflict: \.state,
                insert: { at in
                    try LocationStore.insert(
                        connection, userID: caller.userID, draft, at: at, createdAt: min(draft.createdAt ?? at, now), stamp: stamp)
                },
                overwrite: { at in
                    try LocationStore.overwrite(connection, userID: caller.userID, draft, at: at, stamp: stamp)
                })
        }
    }

    /// The common case of a create, a new id, in one statement (see `LocationStore.insertIfNew`);
    /// nil sends the write down the general path, which tells every other case apart.
    private func createFast(_ caller: Caller, _ draft: LocationDraft) throws -> Location? {
        let now = self.now()
        guard case .insert(let at) = LastWriteWins.decide(.create, stored: nil, requested: draft.updatedAt, sameContent: false, now: now)
        else { return nil }
        do {
            return try pool.withConnection { connection in
                try LocationStore.insertIfNew(connection, caller, draft, at: at, createdAt: min(draft.createdAt ?? at, now))
            }
        } catch let error as PostgresError where error.sqlState == CategoryGuard.sqlState {
            return nil
        }
    }

    /// DELETE: tombstones the location (idempotent); returns the tombstone. Its images are left
    /// to the client (openapi.yaml).
    public func delete(_ caller: Caller, id: UUID, updatedAt: Timestamp?) throws -> Location {
        try pool.withTransaction { connection in
            let stamp = try AccountGate.beginWrite(connection, caller, now: now)
            let stored = try LocationStore.find(connection, userID: caller.userID, id: id)
            let decision = LastWriteWins.decide(
                .delete, stored: stored?.clock, requested: updatedAt, sameContent: false, now: now())
            return try decision.applyDelete(stored: stored, kind: "location", conflict: \.state) { at in
                try LocationStore.tombstone(connection, userID: caller.userID, id: id, at: at, stamp: stamp)
            }
        }
    }
}

extension Location {
    /// The last-write-wins clock of the stored record.
    var clock: LastWriteWins.Stored { .init(updatedAt: updatedAt, isDeleted: deletedAt != nil) }
}
