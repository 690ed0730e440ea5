import Testing

@testable import LocifyRules

@Suite("Timestamps: RFC 3339 in, millisecond UTC out")
struct TimestampTests {
    @Test("formats UTC with exactly three fraction digits")
    func formatsMilliseconds() {
        #expect(Timestamp(milliseconds: 0).rfc3339 == "1970-01-01T00:00:00.000Z")
        #expect(Timestamp(milliseconds: 1_748_733_300_123).rfc3339 == "2025-05-31T23:15:00.123Z")
        #expect(Timestamp(milliseconds: -1).rfc3339 == "1969-12-31T23:59:59.999Z")
        #expect(Timestamp(milliseconds: 951_782_400_000).rfc3339 == "2000-02-29T00:00:00.000Z")
    }

    @Test(
        "renders the years 0000-9999 with four digits, before and after the epoch",
        arguments: [
            (Int64(0), "1970-01-01T00:00:00.000Z"),
            (Int64(-1), "1969-12-31T23:59:59.999Z"),
            (Int64(86_399_999), "1970-01-01T23:59:59.999Z"),
            (Int64(-62_135_596_800_000), "0001-01-01T00:00:00.000Z"),
            (Int64(-62_167_219_200_000), "0000-01-01T00:00:00.000Z"),
            (Int64(253_402_300_799_999), "9999-12-31T23:59:59.999Z"),
        ])
    func formatsRange(milliseconds: Int64, expected: String) {
        #expect(Timestamp(milliseconds: milliseconds).rfc3339 == expected)
        #expect(Timestamp(milliseconds: milliseconds).description == expected)
        var bytes: [UInt8] = Array("at ".utf8)
        Timestamp(milliseconds: milliseconds).appendRFC3339(to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == "at " + expected)
    }

    @Test("renders instants outside 0000-9999 (never parsed, but readable from the database) instead of trapping")
    func formatsOutOfRange() {
        #expect(Timestamp(milliseconds: -62_167_219_200_001).rfc3339 == "-0001-12-31T23:59:59.999Z")
        #expect(Timestamp(milliseconds: 253_402_300_800_000).rfc3339 == "10000-01-01T00:00:00.000Z")
        #expect(Timestamp(milliseconds: .max).rfc3339.hasSuffix(".807Z"))
        #expect(Timestamp(milliseconds: .min).rfc3339.hasPrefix("-"))
    }

    @Test("adding milliseconds moves the instant and saturates instead of overflowing")
    func adding() {
        #expect(Timestamp(milliseconds: 1000).adding(milliseconds: -1500) == Timestamp(milliseconds: -500))
        #expect(Timestamp(milliseconds: .max).adding(milliseconds: 1) == Timestamp(milliseconds: .max))
        #expect(Timestamp(milliseconds: .min).adding(milliseconds: -1) == Timestamp(milliseconds: .min))
        #expect(Timestamp(milliseconds: 1) < Timestamp(milliseconds: 2) && Timestamp.epoch == Timestamp(milliseconds: 0))
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
