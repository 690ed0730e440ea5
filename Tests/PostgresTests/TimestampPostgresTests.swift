import LocifyRules
import Primitives
import Testing

@testable import Postgres

@Suite("Timestamp as timestamptz")
struct TimestampPostgresTests {
    @Test("microseconds since 2000 convert both ways, truncating sub-milliseconds toward the past")
    func wireFormat() {
        let timestamp = Timestamp(milliseconds: 0)
        #expect(timestamp.postgresMicroseconds == -946_684_800_000_000)
        #expect(Timestamp(postgresMicroseconds: -946_684_800_000_000) == timestamp)
        #expect(Timestamp(postgresMicroseconds: -946_684_800_000_001).milliseconds == -1)
        #expect(Timestamp(postgresMicroseconds: 999).milliseconds == 946_684_800_000)
    }

    @Test("values far outside PostgreSQL's range saturate instead of trapping")
    func saturation() {
        #expect(Timestamp(milliseconds: .max).postgresMicroseconds == .max)
        #expect(Timestamp(milliseconds: .min).postgresMicroseconds == .min)
    }

    @Test("binds as timestamptz and timestamptz[], and reads timestamptz and timestamp")
    func types() {
        #expect(Timestamp.postgresDataType == .timestamptz)
        #expect(Timestamp.postgresArrayDataType == PostgresDataType(rawValue: 1185))
        #expect(Timestamp.acceptsPostgresType(.timestamptz) && Timestamp.acceptsPostgresType(.timestamp))
        #expect(!Timestamp.acceptsPostgresType(.text))
    }
}
