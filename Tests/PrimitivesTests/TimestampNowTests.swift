import LocifyRules
import Primitives
import Testing

@Suite("Timestamp.now")
struct TimestampNowTests {
    @Test("now() is the wall clock in milliseconds")
    func now() {
        // 2020-01-01 .. 2200-01-01: a sanity bound on CLOCK_REALTIME, not a timing test.
        let now = Timestamp.now()
        #expect(now > Timestamp(milliseconds: 1_577_836_800_000) && now < Timestamp(milliseconds: 7_258_118_400_000))
    }
}
