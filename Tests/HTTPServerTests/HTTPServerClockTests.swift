import Primitives
import Testing

@testable import HTTPServer

@Suite("The HTTP server's monotonic clock: timeouts in whole nanoseconds")
struct HTTPServerClockTests {
    @Test("a duration becomes whole nanoseconds, clamped to 0...Int64.max")
    func nanosecondsClamped() {
        #expect(Duration.seconds(10).nanosecondsClamped == 10_000_000_000)
        #expect(Duration.nanoseconds(1).nanosecondsClamped == 1)
        #expect(Duration.zero.nanosecondsClamped == 0)
        // Negative durations, under a second included, are no time at all.
        #expect(Duration.nanoseconds(-1).nanosecondsClamped == 0)
        #expect(Duration.milliseconds(-500).nanosecondsClamped == 0)
        #expect(Duration.seconds(-3).nanosecondsClamped == 0)
        #expect(Duration.seconds(Int64.max).nanosecondsClamped == .max)
    }

    @Test("an injected clock reads what it is given")
    func injected() {
        let clock = MonotonicClock { .milliseconds(1500) }
        #expect(clock.now() == .milliseconds(1500))
        #expect(clock.nowNanoseconds() == 1_500_000_000)
    }
}
