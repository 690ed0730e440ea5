import Testing

@testable import Locify

@Suite("Timestamps: RFC 3339 in, millisecond UTC out")
struct TimestampTests {
    @Test("formats UTC with exactly three fraction digits")
    func formatsMilliseconds() {
        #expect(Timestamp(milliseconds: 0).rfc3339 == "1970-01-01T00:00:00.000Z")
        #expect(Timestamp(milliseconds: 1_748_733_300_123).rfc3339 == "2025-05-31T23:15:00.123Z")
        #expect(Timestamp(milliseconds: -1).rfc3339 == "1969-12-31T23:59:59.999Z")
        #expect(Timestamp(milliseconds: 951_782_400_000).rfc3339 == "2000-02-29T00:00:00.000Z")
    }

    @Test("accepts any RFC 3339 form: fraction or not, Z or offset, t or T")
    func parsesForms() {
        let expected = Timestamp(milliseconds: 1_748_733_300_123)
        #expect(Timestamp(rfc3339: "2025-05-31T23:15:00.123Z") == expected)
        #expect(Timestamp(rfc3339: "2025-05-31t23:15:00.123z") == expected)
        #expect(Timestamp(rfc3339: "2025-06-01T01:15:00.123+02:00") == expected)
        #expect(Timestamp(rfc3339: "2025-05-31T22:15:00.123-01:00") == expected)
        #expect(Timestamp(rfc3339: "2025-05-31T23:15:00Z") == Timestamp(milliseconds: 1_748_733_300_000))
        #expect(Timestamp(rfc3339: "2025-05-31 23:15:00.1Z") == Timestamp(milliseconds: 1_748_733_300_100))
    }

    @Test("truncates fractions finer than a millisecond")
    func truncatesToMilliseconds() {
        #expect(Timestamp(rfc3339: "2025-05-31T23:15:00.123999999Z") == Timestamp(milliseconds: 1_748_733_300_123))
    }

    @Test(
        "refuses anything that is not an RFC 3339 date-time",
        arguments: [
            "", "2025-05-31", "2025-05-31T23:15:00", "2025-05-31T23:15:00.Z", "2025-13-01T00:00:00Z",
            "2025-02-29T00:00:00Z", "2025-04-31T00:00:00Z", "2025-05-31T24:00:00Z", "2025-05-31T23:60:00Z",
            "2025-05-31T23:15:00+0200", "2025-05-31T23:15:00Z ", " 2025-05-31T23:15:00Z", "2025/05/31T23:15:00Z",
            "+2025-05-31T23:15:00Z", "2025-05-31T23:15:00.123+02", "１２３４-05-31T23:15:00Z", "2025-05-31T23:15:00+24:00",
        ])
    func refusesMalformed(_ text: String) {
        #expect(Timestamp(rfc3339: text) == nil)
    }

    @Test("round-trips through its own output", arguments: [0, 1, 999, 86_399_999, 1_748_733_300_123, 253_402_300_799_999, -62_135_596_800_000])
    func roundTrips(_ ms: Int64) {
        let stamp = Timestamp(milliseconds: ms)
        #expect(Timestamp(rfc3339: stamp.rfc3339) == stamp)
    }
}
