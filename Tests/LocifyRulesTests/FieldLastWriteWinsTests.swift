import LocifyRules
import Testing

@Suite("Field-level last write wins (issue 36)")
struct FieldLastWriteWinsTests {
    typealias Places = FieldLastWriteWins<LocationField>
    typealias Clock = Places.Clock

    let now = Timestamp(milliseconds: 1_000_000)
    let t = Timestamp(milliseconds: 500_000)

    func ms(_ offset: Int64) -> Timestamp { t.adding(milliseconds: offset) }

    /// Decides `intent` at `requested` against `stored`, every value the same (`same`) or different.
    func decide(_ intent: Places.Intent, _ stored: Clock?, at requested: Timestamp?, same: Bool = false) -> Places.Decision {
        Places.decide(intent, stored: stored, requested: requested, now: now, sameValue: { _ in same })
    }

    @Test("the field order is the stamps' order: each raw value is the field's index, for both kinds")
    func fieldOrder() {
        #expect(CategoryField.allCases.map(\.rawValue) == Array(0..<2))
        #expect(LocationField.allCases.map(\.rawValue) == Array(0..<7))
        #expect(LocationField.allCases == [.categoryID, .name, .address, .description, .coordinates, .isFavorite, .imageURLs])
    }

    @Test("a clock maps to the stamps column and back; a column of another length is refused")
    func clockColumn() throws {
        let column: [Int64] = [1, 2, 3, 4, 5, 6, 7]
        let clock = try #require(Clock(milliseconds: column, deletedAt: nil))
        #expect(clock.milliseconds == column)
        #expect(clock[.coordinates] == Timestamp(milliseconds: 5))
        #expect(clock.updatedAt == Timestamp(milliseconds: 7) && !clock.isDeleted)
        #expect(Clock(milliseconds: [1, 2], deletedAt: nil) == nil)
        #expect(FieldLastWriteWins<CategoryField>.Clock(milliseconds: [1, 2], deletedAt: nil) != nil)
    }

    @Test("the migration's clock: every stamp at updated_at; a tombstone stays deleted, a delete older than a field is forgotten")
    func migratedClock() throws {
        let tombstone = Clock(writtenWhole: t, deletedAt: t)
        #expect(tombstone.isDeleted && tombstone.updatedAt == t && tombstone.stamps == Array(repeating: t, count: 7))
        #expect(!Clock(writtenWhole: t).isDeleted)
        let outlived = try #require(Clock(milliseconds: [1, 9, 1, 1, 1, 1, 1], deletedAt: Timestamp(milliseconds: 5)))
        #expect(!outlived.isDeleted && outlived.updatedAt == Timestamp(milliseconds: 9))
    }

    @Test("rename on the phone, favourite on the tablet, both offline: both are kept, in either arrival order")
    func twoDevicesTwoFields() throws {
        let created = Clock(writtenWhole: t)
        let rename = Places.Intent.patch([.name])
        let favourite = Places.Intent.patch([.isFavorite])
        for (first, second) in [((rename, ms(10)), (favourite, ms(20))), ((favourite, ms(20)), (rename, ms(10)))] {
            let one = decide(first.0, created, at: first.1)
            let two = decide(second.0, one.clock, at: second.1)
            #expect(one.outcome == .updated && two.outcome == .updated)
            let clock = try #require(two.clock)
            #expect(clock[.name] == ms(10) && clock[.isFavorite] == ms(20) && clock[.address] == t)
            #expect(clock.updatedAt == ms(20))
        }
        // Today's rule refuses the older of the two whole writes.
        #expect(
            LastWriteWins.decide(.replace, stored: .init(updatedAt: ms(20), isDeleted: false), requested: ms(10), sameContent: false, now: now)
                == .conflict)
    }

    @Test("a patch sets only the fields it carries that are older than it; the record's updated_at is its newest field")
    func patchSetsOlderFields() throws {
        var stored = Clock(writtenWhole: t)
        stored = try #require(decide(.patch([.name]), stored, at: ms(30)).clock)
        let decision = decide(.patch([.name, .address]), stored, at: ms(20))
        #expect(decision.outcome == .updated && decision.setting == [.address] && decision.changesRecord)
        let clock = try #require(decision.clock)
        #expect(clock[.name] == ms(30) && clock[.address] == ms(20) && clock.updatedAt == ms(30))
    }

    @Test("a patch that sets nothing: a replay when a field holds its value at its time and none another, else E008")
    func patchSettingNothing() throws {
        let stored = try #require(decide(.patch([.name, .address]), Clock(writtenWhole: t), at: ms(10)).clock)
        let replay = decide(.patch([.name, .address]), stored, at: ms(10), same: true)
        #expect(replay.outcome == .replayed && replay.setting.isEmpty && !replay.changesRecord && replay.clock == stored)
        // Another value at the same time: the first to arrive stays, the later one is E008.
        #expect(decide(.patch([.name, .address]), stored, at: ms(10), same: false).outcome == .conflict)
        // Same time and value on name, but description is older than the write: it is set.
        #expect(decide(.patch([.name, .description]), stored, at: ms(10), same: true).setting == [.description])
        // Every field newer on the server: E008, nothing stored.
        let older = decide(.patch([.name]), stored, at: ms(5), same: true)
        #expect(older.outcome == .conflict && !older.changesRecord && older.clock == stored)
        // The retry of a patch after a newer write set one of its fields is still a replay, as its
        // first arrival was applied.
        let newerAddress = try #require(decide(.patch([.address]), stored, at: ms(15)).clock)
        #expect(decide(.patch([.name, .address]), newerAddress, at: ms(10), same: true).outcome == .replayed)
        #expect(decide(.patch([.name, .categoryID]), stored, at: t, same: true).outcome == .replayed)
        #expect(decide(.patch([.name, .categoryID]), stored, at: t, same: false).outcome == .conflict)
    }

    @Test("a patch, replace or delete of an id never created is not found and not kept; a create inserts every field")
    func neverCreated() {
        for intent in [Places.Intent.patch([.name]), .replace, .delete] {
            let decision = decide(intent, nil, at: t)
            #expect(decision.outcome == .notFound && decision.clock == nil && !decision.changesRecord)
        }
        let created = decide(.create, nil, at: t)
        #expect(created.outcome == .inserted && created.clock == Clock(writtenWhole: t) && created.setting == Set(LocationField.allCases))
    }

    @Test("a patch not newer than the tombstone is E008 but its fields are stored, hidden; a later comeback shows them")
    func patchUnderTombstone() throws {
        let tombstone = try #require(decide(.delete, Clock(writtenWhole: t), at: ms(20)).clock)
        #expect(tombstone.isDeleted && tombstone.updatedAt == ms(20))
        let hidden = decide(.patch([.name]), tombstone, at: ms(10))
        #expect(hidden.outcome == .conflict && hidden.setting == [.name] && hidden.changesRecord)
        let hiddenClock = try #require(hidden.clock)
        #expect(hiddenClock.isDeleted && hiddenClock.updatedAt == ms(20))
        // A patch at the tombstone's time: the delete wins the tie.
        #expect(decide(.patch([.address]), hiddenClock, at: ms(20)).outcome == .conflict)
        // A newer patch of another field brings the record back with the hidden name.
        let back = decide(.patch([.isFavorite]), hiddenClock, at: ms(30))
        #expect(back.outcome == .updated && back.setting == [.isFavorite])
        let clock = try #require(back.clock)
        #expect(!clock.isDeleted && clock[.name] == ms(10) && clock[.isFavorite] == ms(30) && clock[.address] == t)
    }

    @Test("a delete wins a tie with the newest field, loses to a newer field, and moves a tombstone only forward")
    func deletes() throws {
        let stored = try #require(decide(.patch([.name]), Clock(writtenWhole: t), at: ms(10)).clock)
        let tie = decide(.delete, stored, at: ms(10))
        #expect(tie.outcome == .deleted && tie.clock?.deletedAt == ms(10))
        // Older than the newest field (though newer than others): E008, nothing stored.
        let older = decide(.delete, stored, at: ms(5))
        #expect(older.outcome == .conflict && !older.changesRecord && older.clock == stored)
        let tombstone = try #require(tie.clock)
        let moved = decide(.delete, tombstone, at: ms(15))
        #expect(moved.outcome == .deleted && moved.clock?.deletedAt == ms(15) && moved.changesRecord)
        for requested in [ms(10), ms(3), nil] {
            let again = decide(.delete, tombstone, at: requested)
            #expect(again.outcome == .alreadyDeleted && !again.changesRecord && again.clock == tombstone)
        }
    }

    @Test("a patch without updated_at is stamped after the record and never conflicts; a future one is clamped to now")
    func stamping() throws {
        let ahead = now.adding(milliseconds: 5)
        let stored = Clock(writtenWhole: ahead, deletedAt: ahead)
        let unstamped = decide(.patch([.name]), stored, at: nil)
        #expect(unstamped.outcome == .updated && unstamped.at == ahead.adding(milliseconds: 1))
        let future = decide(.patch([.name]), Clock(writtenWhole: t), at: now.adding(milliseconds: 60_000))
        #expect(future.outcome == .updated && future.clock?[.name] == now)
    }
}
