import Foundation
import Testing

@testable import Postgres

@Suite("PostgresTimestamp")
struct PostgresTimestampTests {
    @Test(
        "renders RFC 3339 in UTC with milliseconds",
        arguments: [
            (Int64(0), "1970-01-01T00:00:00.000Z"),
            (Int64(-1), "1969-12-31T23:59:59.999Z"),
            (Int64(1_748_733_300_123), "2025-05-31T23:15:00.123Z"),
            (Int64(951_782_400_000), "2000-02-29T00:00:00.000Z"),
            (Int64(-62_135_596_800_000), "0001-01-01T00:00:00.000Z"),
            (Int64(253_402_300_799_999), "9999-12-31T23:59:59.999Z"),
        ])
    func description(milliseconds: Int64, expected: String) {
        #expect(PostgresTimestamp(millisecondsSince1970: milliseconds).description == expected)
    }

    @Test("a Date is truncated toward the past to the millisecond")
    func fromDate() {
        #expect(PostgresTimestamp(Date(timeIntervalSince1970: 1.2349)).millisecondsSince1970 == 1234)
        #expect(PostgresTimestamp(Date(timeIntervalSince1970: -0.0005)).millisecondsSince1970 == -1)
    }

    @Test("microseconds since 2000 convert both ways, truncating sub-milliseconds toward the past")
    func wireFormat() {
        let timestamp = PostgresTimestamp(millisecondsSince1970: 0)
        #expect(timestamp.postgresMicroseconds == -946_684_800_000_000)
        #expect(PostgresTimestamp(postgresMicroseconds: -946_684_800_000_000) == timestamp)
        #expect(PostgresTimestamp(postgresMicroseconds: -946_684_800_000_001).millisecondsSince1970 == -1)
        #expect(PostgresTimestamp(postgresMicroseconds: 999).millisecondsSince1970 == 946_684_800_000)
    }

    @Test("values far outside PostgreSQL's range saturate instead of trapping")
    func saturation() {
        #expect(PostgresTimestamp(millisecondsSince1970: .max).postgresMicroseconds == .max)
        #expect(PostgresTimestamp(millisecondsSince1970: .min).postgresMicroseconds == .min)
        #expect(PostgresTimestamp(millisecondsSince1970: .max).adding(milliseconds: 1).millisecondsSince1970 == .max)
    }
}
