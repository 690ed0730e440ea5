import FoundationEssentials
import Synchronization

/// Remembered positions in deep location listings, so `page=500` does not skip 9,980 index
/// entries on every request: the id of the row at a known offset of a listing (user, sort,
/// filters), valid only while the user's change stamp is the one it was read at. A page is then
/// read after that row instead of from the start. The statement re-checks the stamp in the same
/// snapshot it reads the page in, so a stale entry is never used, only missed (bench/RESULTS.md,
/// "Deep pages").
final class PageBoundaries: Sendable {
    /// One listing: everything that decides the order and the rows of a page, except the page.
    struct Key: Hashable, Sendable {
        var userID: String
        var sort: LocationQuery.Sort
        var categoryID: UUID?
        var isFavorite: Bool?
    }

    /// The state of a user's records: the user's change stamp (every write bumps it) and the
    /// account's creation time in microseconds (a re-created account restarts its stamps).
    struct Stamp: Equatable, Sendable {
        var changeSeq: Int64
        var account: Int64
    }

    /// Where to start reading a page: `skip` rows after the row `boundaryID` (which is itself
    /// row number `skip` counted from 0), valid at `stamp`.
    struct Start: Equatable, Sendable {
        var stamp: Stamp
        var boundaryID: UUID
        var skip: Int64
    }

    private struct Entry {
        var stamp: Stamp
        var rows: [Int64: UUID]
        var lastUse: UInt64
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var clock: UInt64 = 0
    }

    private let state = Mutex(State())
    /// Listings remembered at most (least recently used dropped first). Default 1,024, which
    /// with `maxBoundaries` bounds the memory to well under 1 MB.
    let maxListings: Int
    /// Boundaries kept per listing (the shallowest dropped first). Default 16.
    let maxBoundaries: Int

    init(maxListings: Int = 1024, maxBoundaries: Int = 16) {
        self.maxListings = maxListings
        self.maxBoundaries = maxBoundaries
    }

    /// The nearest remembered boundary at or before `offset`, if any.
    func start(_ key: Key, at offset: Int64) -> Start? {
        state.withLock { state in
            guard var entry = state.entries[key] else { return nil }
            var best: (offset: Int64, id: UUID)?
            for (rowOffset, id) in entry.rows where rowOffset <= offset && rowOffset > (best?.offset ?? -1) {
                best = (rowOffset, id)
            }
            guard let best else { return nil }
            state.clock += 1
            entry.lastUse = state.clock
            state.entries[key] = entry
            return Start(stamp: entry.stamp, boundaryID: best.id, skip: offset - best.offset)
        }
    }

    /// Records that the rows `ids` sit at `offset`, `offset + 1`, ... of the listing at `stamp`;
    /// keeps the first and the last (the start of this page and the row before the next one).
    /// Boundaries read at another stamp are dropped.
    func remember(_ key: Key, stamp: Stamp, offset: Int64, ids: [UUID]) {
        guard let first = ids.first, let last = ids.last else { return }
        state.withLock { state in
            state.clock += 1
            var entry = state.entries[key] ?? Entry(stamp: stamp, rows: [:], lastUse: 0)
            if entry.stamp != stamp { entry = Entry(stamp: stamp, rows: [:], lastUse: 0) }
            entry.lastUse = state.clock
            entry.rows[offset] = first
            entry.rows[offset + Int64(ids.count) - 1] = last
            while entry.rows.count > maxBoundaries, let shallowest = entry.rows.keys.min() {
                entry.rows[shallowest] = nil
            }
            if state.entries[key] == nil && state.entries.count >= maxListings,
                let oldest = state.entries.min(by: { $0.value.lastUse < $1.value.lastUse })?.key
            {
                state.entries[oldest] = nil
            }
            state.entries[key] = entry
        }
    }

    /// Forgets the listing (its boundaries turned out stale).
    func forget(_ key: Key) {
        _ = state.withLock { state in state.entries.removeValue(forKey: key) }
    }
}
