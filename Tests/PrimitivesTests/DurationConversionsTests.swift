import Primitives
import Testing

@Suite("Duration conversions: one meaning per name")
struct DurationConversionsTests {
    @Test("milliseconds and nanoseconds are whole, truncated toward zero")
    func wholeUnits() {
        #expect(Duration.milliseconds(1500).milliseconds == 1500)
        #expect(Duration.nanoseconds(1_999_999).milliseconds == 1)
        #expect(Duration.nanoseconds(-1_500_000).milliseconds == -1)
        #expect(Duration.seconds(2).nanoseconds == 2_000_000_000)
        #expect((Duration.seconds(-3) + .nanoseconds(1)).nanoseconds == -2_999_999_999)
        #expect(Duration.zero.milliseconds == 0 && Duration.zero.nanoseconds == 0)
    }

    @Test("milliseconds and nanoseconds saturate at Int64's range instead of trapping")
    func saturation() {
        #expect(Duration.seconds(Int64.max).milliseconds == .max)
        #expect(Duration.seconds(Int64.min).milliseconds == .min)
        #expect(Duration.seconds(Int64.max / 1000).milliseconds == Int64.max / 1000 * 1000)
        #expect(Duration.seconds(10_000_000_000).nanoseconds == .max)
        #expect(Duration.seconds(-10_000_000_000).nanoseconds == .min)
        // The last whole second that fits, plus a fraction that pushes the sum over.
        #expect((Duration.seconds(9_223_372_036) + .milliseconds(900)).nanoseconds == .max)
        #expect((Duration.seconds(9_223_372_036) + .milliseconds(800)).nanoseconds == 9_223_372_036_800_000_000)
    }

    @Test("seconds and fractionalMilliseconds are fractional")
    func fractional() {
        #expect(Duration.milliseconds(1500).seconds == 1.5)
        #expect(Duration.milliseconds(-250).seconds == -0.25)
        #expect(Duration.nanoseconds(1_234_567).fractionalMilliseconds == 1.235)
        #expect(Duration.nanoseconds(1_234_400).fractionalMilliseconds == 1.234)
        #expect(Duration.seconds(2).fractionalMilliseconds == 2000)
    }
}
