import FoundationEssentials
import LocifyRules
import Postgres
import Primitives

/// Locations: listing with filters and sorts, reads, field-level last-write-wins writes and deletes
/// (openapi.yaml). Every write is one transaction under the user's write lock.
public struct LocationService: Sendable {
    let accounts: Accounts
    /// Where deep pages of each listing start (see `listDeep`).
    let boundaries = PageBoundaries()

    /// The reads and writes locations share with categories.
    private var records: RecordService<LocationStore> { RecordService(accounts: accounts) }

    /// One page of the caller's live locations, filtered, searched and sorted as `query` says, with
    /// the exact total; deep pages start from a remembered boundary (`listDeep`).
    public func list(_ caller: Caller, _ query: LocationQuery) throws -> Page<Location> {
        if query.search == nil && query.page.offset >= LocationStore.deepOffset && query.page.offset < Int64.max {
            return try listDeep(caller, query)
        }
        // A search counts the user's matches, so its best plan depends on the user's size (an index
        // scan of their rows, or a table scan for a user who owns most of it). The sessions'
        // generic plans cannot tell users apart; this statement is planned for its values.
        var preparing: ((PostgresConnection) throws -> Void)?
        if query.search != nil { preparing = { connection in try LocationStore.planForValues(connection) } }
        let rows = try accounts.read(caller, LocationStore.listQuery(caller, query), preparing: preparing)
        return Page(rows: rows, request: query.page)
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
        let rows = try accounts.read(caller, LocationStore.deepListQuery(caller, query, deep))
        let stamp = rows.first?.stamp ?? PageBoundaries.Stamp(changeSeq: -1, account: -1)
        return (Page(rows: rows.map(\.listing), request: query.page), stamp)
    }

    /// The caller's live location `id`; E007 when it is unknown, deleted or another user's.
    public func get(_ caller: Caller, id: UUID) throws -> Location {
        try records.get(caller, id: id)
    }

    /// POST: creates the location, or upserts it under last-write-wins when the id exists. The
    /// category must be one the user has (E007 otherwise); see `shown`.
    public func create(_ caller: Caller, _ draft: LocationDraft) throws -> WriteOutcome<Location> {
        try shown(records.write(caller, draft, creating: true))
    }

    /// PUT: replaces an existing location (or revives its tombstone when newer); unknown id E007.
    public func replace(_ caller: Caller, _ draft: LocationDraft) throws -> WriteOutcome<Location> {
        try shown(records.write(caller, draft, creating: false))
    }

    /// PATCH: writes the fields the patch carries, each where it is newer than the stored one's
    /// (or revives the tombstone when newer); unknown id E007; see `shown`.
    public func patch(_ caller: Caller, _ patch: LocationPatch) throws -> WriteOutcome<Location> {
        try shown(records.patch(caller, patch))
    }

    /// The answer to a stored write: the location where its category shows it (the target of a
    /// reassign delete), or E007 when its category is deleted with a cascade; the write is kept
    /// then, and shows when the category comes back (openapi.yaml, "Writes in any order").
    private func shown(_ outcome: WriteOutcome<Location>) throws -> WriteOutcome<Location> {
        if outcome.record.isHiddenWithCategory { throw LocifyError(.unknownCategory) }
        return outcome
    }

    /// DELETE: tombstones the location (idempotent); returns the tombstone. Its images are left
    /// to the client (openapi.yaml).
    public func delete(_ caller: Caller, id: UUID, updatedAt: Timestamp?) throws -> Location {
        try records.delete(caller, id: id, updatedAt: updatedAt)
    }
}
