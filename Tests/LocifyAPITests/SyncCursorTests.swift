import Foundation
import Locify
import LocifyRules
import Primitives
import Testing

@testable import LocifyAPI

@Suite("Sync cursors are opaque, round-trip, and refuse garbage and other users")
struct SyncCursorTests {
    let cursor = SyncCursor(
        phase: .delta, seq: 1234, rank: 1, afterID: UUID(apiString: "1f3599be-6e0e-5cf8-aa59-b97dfdc46aec") ?? SyncCursor.minID,
        issuedAt: Timestamp(milliseconds: 1_748_733_300_123))

    @Test("a cursor decodes to itself for its owner")
    func roundTrip() throws {
        let text = cursor.encoded(for: "user-1")
        #expect(try SyncCursor(encoded: text, userID: "user-1") == cursor)
        #expect(text.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
    }

    @Test("another user's cursor is E001")
    func otherUser() {
        let text = cursor.encoded(for: "user-1")
        #expect(throws: RequestDecodingError.self) { try SyncCursor(encoded: text, userID: "user-2") }
    }

    @Test("garbage, truncation and single-character changes are E001", arguments: ["", "abc", "!!!!", String(repeating: "A", count: 58), String(repeating: "A", count: 5000)])
    func garbage(_ text: String) {
        #expect(throws: RequestDecodingError.self) { try SyncCursor(encoded: text, userID: "user-1") }
    }

    @Test("every single-character tamper is detected")
    func tamper() {
        let text = Array(cursor.encoded(for: "user-1"))
        for index in text.indices {
            var changed = text
            changed[index] = changed[index] == "A" ? "B" : "A"
            #expect(throws: RequestDecodingError.self) { try SyncCursor(encoded: String(changed), userID: "user-1") }
        }
        #expect(throws: RequestDecodingError.self) { try SyncCursor(encoded: String(text.dropLast()), userID: "user-1") }
    }

    @Test("every phase round-trips; a rank above 2 or a negative stamp is refused even with a valid checksum")
    func phasesAndRanges() throws {
        for phase in [SyncCursor.Phase.snapshotCategories, .snapshotLocations, .delta] {
            for rank: UInt8 in 0...2 {
                var value = cursor
                value.phase = phase
                value.rank = rank
                #expect(try SyncCursor(encoded: value.encoded(for: "u"), userID: "u") == value)
            }
        }
        var badRank = cursor
        badRank.rank = 3
        #expect(throws: RequestDecodingError.self) { try SyncCursor(encoded: badRank.encoded(for: "u"), userID: "u") }
        var negative = cursor
        negative.seq = -1
        #expect(throws: RequestDecodingError.self) { try SyncCursor(encoded: negative.encoded(for: "u"), userID: "u") }
        let after = SyncCursor.after(seq: 7, issuedAt: .epoch)
        #expect(after.phase == .delta && after.rank == 2 && after.afterID == SyncCursor.minID)
    }
}
