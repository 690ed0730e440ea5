import LocifyRules
import Testing

@Suite("Last write wins (openapi.yaml)")
struct LastWriteWinsTests {
    let now = Timestamp(milliseconds: 1_000_000)
    let t = Timestamp(milliseconds: 500_000)

    func live(_ at: Timestamp) -> LastWriteWins.Stored { .init(updatedAt: at, isDeleted: false) }
    func tombstone(_ at: Timestamp) -> LastWriteWins.Stored { .init(updatedAt: at, isDeleted: true) }

    @Test("a create of a new id inserts at the requested time")
    func createNew() {
        #expect(LastWriteWins.decide(.create, stored: nil, requested: t, sameContent: false, now: now) == .insert(at: t))
    }

    @Test("a requested time in the future is clamped to the server clock")
    func clampsFuture() {
        let future = now.adding(milliseconds: 60_000)
        #expect(LastWriteWins.decide(.create, stored: nil, requested: future, sameContent: false, now: now) == .insert(at: now))
        #expect(LastWriteWins.decide(.replace, stored: live(t), requested: future, sameContent: false, now: now) == .overwrite(at: now))
    }

    @Test("a write without updated_at is stamped now, or stored + 1 ms, and never conflicts")
    func unstampedWrites() {
        #expect(LastWriteWins.decide(.create, stored: nil, requested: nil, sameContent: false, now: now) == .insert(at: now))
        #expect(LastWriteWins.decide(.replace, stored: live(t), requested: nil, sameContent: false, now: now) == .overwrite(at: now))
        let ahead = now.adding(milliseconds: 5)
        #expect(
            LastWriteWins.decide(.replace, stored: live(ahead), requested: nil, sameContent: false, now: now)
                == .overwrite(at: ahead.adding(milliseconds: 1)))
        #expect(
            LastWriteWins.decide(.delete, stored: live(ahead), requested: nil, sameContent: false, now: now)
                == .overwrite(at: ahead.adding(milliseconds: 1)))
    }

    @Test("older than the stored record: conflict, for every intent")
    func olderConflicts() {
        let older = t.adding(milliseconds: -1)
        for intent in [LastWriteWins.Intent.create, .replace, .delete] {
            #expect(LastWriteWins.decide(intent, stored: live(t), requested: older, sameContent: true, now: now) == .conflict)
        }
    }

    @Test("same time and same content is a replay; same time and other content a conflict")
    func sameTime() {
        #expect(LastWriteWins.decide(.create, stored: live(t), requested: t, sameContent: true, now: now) == .replay)
        #expect(LastWriteWins.decide(.replace, stored: live(t), requested: t, sameContent: true, now: now) == .replay)
        #expect(LastWriteWins.decide(.create, stored: live(t), requested: t, sameContent: false, now: now) == .conflict)
    }

    @Test("newer than the stored record: overwrite")
    func newerWins() {
        let newer = t.adding(milliseconds: 1)
        #expect(LastWriteWins.decide(.create, stored: live(t), requested: newer, sameContent: false, now: now) == .overwrite(at: newer))
        #expect(LastWriteWins.decide(.replace, stored: live(t), requested: newer, sameContent: true, now: now) == .overwrite(at: newer))
    }

    @Test("PUT and DELETE of an id that never existed: not found")
    func missing() {
        #expect(LastWriteWins.decide(.replace, stored: nil, requested: t, sameContent: false, now: now) == .notFound)
        #expect(LastWriteWins.decide(.delete, stored: nil, requested: nil, sameContent: false, now: now) == .notFound)
    }

    @Test("writes against a tombstone bring it back only when strictly newer")
    func tombstones() {
        #expect(
            LastWriteWins.decide(.create, stored: tombstone(t), requested: t.adding(milliseconds: 1), sameContent: false, now: now)
                == .overwrite(at: t.adding(milliseconds: 1)))
        #expect(LastWriteWins.decide(.replace, stored: tombstone(t), requested: t, sameContent: true, now: now) == .conflict)
        #expect(LastWriteWins.decide(.create, stored: tombstone(t), requested: t.adding(milliseconds: -1), sameContent: true, now: now) == .conflict)
        #expect(LastWriteWins.decide(.create, stored: tombstone(t), requested: nil, sameContent: false, now: now) == .overwrite(at: now))
    }

    @Test("deleting a tombstone again: an older, equal or unstamped delete changes nothing")
    func deleteTwice() {
        #expect(LastWriteWins.decide(.delete, stored: tombstone(t), requested: nil, sameContent: false, now: now) == .alreadyDeleted)
        #expect(LastWriteWins.decide(.delete, stored: tombstone(t), requested: t.adding(milliseconds: -5), sameContent: false, now: now) == .alreadyDeleted)
        #expect(LastWriteWins.decide(.delete, stored: tombstone(t), requested: t, sameContent: false, now: now) == .alreadyDeleted)
    }

    @Test("deleting a tombstone again with a newer time moves the tombstone to it (clamped), so it is judged as if in order")
    func deleteTwiceNewer() {
        let later = t.adding(milliseconds: 5)
        #expect(LastWriteWins.decide(.delete, stored: tombstone(t), requested: later, sameContent: false, now: now) == .overwrite(at: later))
        #expect(
            LastWriteWins.decide(.delete, stored: tombstone(t), requested: now.adding(milliseconds: 9), sameContent: false, now: now)
                == .overwrite(at: now))
        // delete@t, delete@t+5, then a write made between them: it loses, as it would in time order.
        #expect(LastWriteWins.decide(.replace, stored: tombstone(later), requested: t.adding(milliseconds: 2), sameContent: false, now: now) == .conflict)
    }

    @Test("a delete at the same time as the live record applies")
    func deleteSameTime() {
        #expect(LastWriteWins.decide(.delete, stored: live(t), requested: t, sameContent: false, now: now) == .overwrite(at: t))
    }
}
