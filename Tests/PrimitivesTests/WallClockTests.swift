import LocifyRules
import Primitives
import Testing

@Suite("WallClock")
struct WallClockTests {
    @Test("the system clock is the wall clock, in milliseconds and in seconds")
    func system() {
        // 2020-01-01 .. 2200-01-01: a sanity bound on CLOCK_REALTIME, not a timing test.
        let now = WallClock.system.now()
        #expect(now > Timestamp(milliseconds: 1_577_836_800_000) && now < Timestamp(milliseconds: 7_258_118_400_000))
        let seconds = WallClock.system.seconds()
        #expect(seconds > 1_577_836_800 && seconds < 7_258_118_400)
    }

    @Test("a clock reads the time it is given, truncated to milliseconds")
    func injected() {
        let clock = WallClock { .seconds(1_748_736_000) + .microseconds(1_999) }
        #expect(clock.now() == Timestamp(milliseconds: 1_748_736_000_001))
        #expect(clock.seconds() == 1_748_736_000.001999)
    }
}
