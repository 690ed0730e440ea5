import Foundation
import LocifyRules
import Primitives
import Testing
import TestSupport
import TestSupportDatabase

@testable import Postgres

@Suite("Binds and binary decoding against PostgreSQL")
struct PostgresCodingTests {
    static let awkwardStrings = [
        "",
        "plain",
        "it's \"quoted\"",
        "back\\slash \\x00 \\\\",
        "'; DROP TABLE x; --",
        "$1 $2 ? %s",
        "über café 日本語 🎉👩‍👩‍👧 e\u{301}",
        "line\nbreak\ttab\r",
        String(repeating: "long ", count: 20_000),
    ]

    @Test("every scalar type round-trips through a bind and back")
    func scalarRoundTrip() throws {
        try TestDatabase.with { database in
            try database.pool.withConnection { connection in
                let id = UUID()
                let timestamp = Timestamp(milliseconds: 1_748_733_300_123)
                let date = Date(timeIntervalSince1970: 1_700_000_000.456)
                let query: PostgresQuery = """
                    SELECT \("text"), \(42), \(Int32(-7)), \(Int64.min), \(true), \(false), \(-1.25),
                           \(id), \(timestamp), \(date), \(Double.greatestFiniteMagnitude), \(Int.max)
                    """
                let row = try #require(try connection.query(query).first)
                #expect(try row.decode(0, as: String.self) == "text")
                #expect(try row.decode(1, as: Int.self) == 42)
                #expect(try row.decode(2, as: Int32.self) == -7)
                #expect(try row.decode(3, as: Int64.self) == .min)
                #expect(try row.decode(4, as: Bool.self) == true)
                #expect(try row.decode(5, as: Bool.self) == false)
                #expect(try row.decode(6, as: Double.self) == -1.25)
                #expect(try row.decode(7, as: UUID.self) == id)
                #expect(try row.decode(8, as: Timestamp.self) == timestamp)
                #expect(try row.decode(9, as: Date.self) == date)
                #expect(try row.decode(10, as: Double.self) == .greatestFiniteMagnitude)
                #expect(try row.decode(11, as: Int.self) == .max)
            }
        }
    }

    @Test("the server sees exactly the bound value: uuid text, integer arithmetic, boolean logic")
    func serverSeesValues() throws {
        try TestDatabase.with { database in
            try database.pool.withConnection { connection in
                let id = try #require(UUID(uuidString: "6BA7B811-9DAD-11D1-80B4-00C04FD430C8"))
                let row = try #require(try connection.query("SELECT \(id)::text, \(41) + 1, NOT \(true), \(Int32(3)) * 2").first)
                #expect(try row.decode(0, as: String.self) == "6ba7b811-9dad-11d1-80b4-00c04fd430c8")
                #expect(try row.decode(1, as: Int.self) == 42)
                #expect(try row.decode(2, as: Bool.self) == false)
                #expect(try row.decode(3, as: Int.self) == 6)
            }
        }
    }

    @Test("awkward strings round-trip unchanged and are stored as data, never run as SQL")
    func awkwardStringsRoundTrip() throws {
        try TestDatabase.with { database in
            try database.pool.withConnection { connection in
                try connection.execute(unsafeSQL: "CREATE TABLE x (value text NOT NULL)")
                for value in Self.awkwardStrings {
                    try connection.query("INSERT INTO x (value) VALUES (\(value))")
                    let row = try #require(try connection.query("SELECT \(value), length(\(value))").first)
                    #expect(try row.decode(0, as: String.self) == value)
                    #expect(try row.decode(1, as: Int.self) == value.unicodeScalars.count)
                }
                let stored = try connection.query("SELECT value FROM x").map { try $0.decode(0, as: String.self) }
                #expect(Set(stored) == Set(Self.awkwardStrings))
            }
        }
    }

    @Test("string and uuid arrays round-trip, empty arrays included")
    func arrays() throws {
        try TestDatabase.with { database in
            try database.pool.withConnection { connection in
                let ids = [UUID(), UUID(), UUID()]
                let noStrings: [String] = []
                let noIDs: [UUID] = []
                let query: PostgresQuery = """
                    SELECT \(Self.awkwardStrings), \(ids), \(noStrings), \(noIDs),
                           cardinality(\(Self.awkwardStrings)), \(ids)[2], \([1, 2, 3])
                    """
                let row = try #require(try connection.query(query).first)
                #expect(try row.decode(0, as: [String].self) == Self.awkwardStrings)
                #expect(try row.decode(1, as: [UUID].self) == ids)
                #expect(try row.decode(2, as: [String].self) == [])
                #expect(try row.decode(3, as: [UUID].self) == [])
                #expect(try row.decode(4, as: Int.self) == Self.awkwardStrings.count)
                #expect(try row.decode(5, as: UUID.self) == ids[1])
                #expect(try row.decode(6, as: [Int].self) == [1, 2, 3])
            }
        }
    }

    @Test("arrays built by the server decode: varchar[], NULL elements into optionals, empty literals")
    func serverArrays() throws {
        try TestDatabase.with { database in
            try database.pool.withConnection { connection in
                let row = try #require(
                    try connection.query(
                        "SELECT ARRAY['a', 'b']::varchar[] AS v, ARRAY['a', NULL] AS n, '{}'::uuid[] AS e, ARRAY[ARRAY['a']] AS m"
                    ).first
                )
                #expect(try row.decode(0, as: [String].self) == ["a", "b"])
                #expect(try row.decode(1, as: [String?].self) == ["a", nil])
                #expect(try row.decode(2, as: [UUID].self) == [])
                #expect(throws: PostgresError.self) { try row.decode(1, as: [String].self) }
                #expect(throws: PostgresError.self) { try row.decode(3, as: [String].self) }
            }
        }
    }

    @Test("each decodable type reads its column types: int2/int4/int8, float4, varchar, name, bpchar, jsonb, timestamp")
    func columnTypeVariants() throws {
        try TestDatabase.with { database in
            try database.pool.withConnection { connection in
                let row = try #require(
                    try connection.query(
                        """
                        SELECT 1::int2, 2::int4, 3::int8, 0.5::float4, 'v'::varchar, 'n'::name, 'c'::char(3),
                               '{"a": 1}'::jsonb, '2000-01-01 00:00:00.001'::timestamp, 7::int2
                        """
                    ).first
                )
                #expect(try row.decode(0, as: Int.self) == 1)
                #expect(try row.decode(1, as: Int.self) == 2)
                #expect(try row.decode(2, as: Int64.self) == 3)
                #expect(try row.decode(3, as: Double.self) == 0.5)
                #expect(try row.decode(4, as: String.self) == "v")
                #expect(try row.decode(5, as: String.self) == "n")
                #expect(try row.decode(6, as: String.self) == "c  ")
                #expect(try row.decode(7, as: String.self) == "{\"a\": 1}")
                #expect(try row.decode(8, as: Timestamp.self).milliseconds == 946_684_800_001)
                #expect(try row.decode(9, as: Int32.self) == 7)
            }
        }
    }

    @Test("NULL decodes to nil for every optional type")
    func nullsIntoOptionals() throws {
        try TestDatabase.with { database in
            try database.pool.withConnection { connection in
                let row = try #require(
                    try connection.query(
                        """
                        SELECT NULL::text, NULL::int8, NULL::int4, NULL::bool, NULL::float8, NULL::uuid,
                               NULL::timestamptz, NULL::timestamptz, NULL::text[], NULL::uuid[], NULL::int8
                        """
                    ).first
                )
                #expect(try row.decode(0, as: String?.self) == nil)
                #expect(try row.decode(1, as: Int?.self) == nil)
                #expect(try row.decode(2, as: Int32?.self) == nil)
                #expect(try row.decode(3, as: Bool?.self) == nil)
                #expect(try row.decode(4, as: Double?.self) == nil)
                #expect(try row.decode(5, as: UUID?.self) == nil)
                #expect(try row.decode(6, as: Timestamp?.self) == nil)
                #expect(try row.decode(7, as: Date?.self) == nil)
                #expect(try row.decode(8, as: [String]?.self) == nil)
                #expect(try row.decode(9, as: [UUID]?.self) == nil)
                #expect(try row.decode(10, as: Int64?.self) == nil)
                #expect(row.isNull(0))
            }
        }
    }

    @Test("optional binds send NULL when nil and the value otherwise")
    func optionalBinds() throws {
        try TestDatabase.with { database in
            try database.pool.withConnection { connection in
                let missing: UUID? = nil
                let present: String? = "here"
                let row = try #require(try connection.query("SELECT \(missing) IS NULL, \(present)").first)
                #expect(try row.decode(0, as: Bool.self))
                #expect(try row.decode(1, as: String?.self) == "here")
            }
        }
    }

    @Test("NULL into a non-optional type is a decoding error naming the column")
    func nullIntoNonOptional() throws {
        try TestDatabase.with { database in
            try database.pool.withConnection { connection in
                let row = try #require(try connection.query("SELECT NULL::text AS nickname").first)
                let error = try #require(throws: PostgresError.self) { try row.decode(0, as: String.self) }
                #expect(error.kind == .decoding)
                #expect(error.column == "nickname")
                #expect(error.message.contains("nickname"))
                let byName = try #require(throws: PostgresError.self) { try row.decode(column: "nickname", as: Int.self) }
                #expect(byName.column == "nickname")
            }
        }
    }

    @Test("a column of another type is a decoding error naming the column and both types")
    func typeMismatch() throws {
        try TestDatabase.with { database in
            try database.pool.withConnection { connection in
                let row = try #require(try connection.query("SELECT 'x'::text AS label, 5::int8 AS big").first)
                let error = try #require(throws: PostgresError.self) { try row.decode(column: "label", as: Int.self) }
                #expect(error.kind == .decoding)
                #expect(error.column == "label")
                #expect(error.message.contains("text"))
                let narrow = try #require(throws: PostgresError.self) { try row.decode(1, as: Int32.self) }
                #expect(narrow.column == "big")
                let unknown = try #require(throws: PostgresError.self) { try row.decode(column: "missing", as: Int.self) }
                #expect(unknown.kind == .decoding)
            }
        }
    }

    @Test(
        "timestamps at millisecond precision round-trip exactly, before 1970 and at the epoch included",
        arguments: [
            Int64(0), -1, 1, 999, -999, -86_400_001, 1_748_733_300_123, -62_135_596_800_000, 253_402_300_799_999,
            946_684_800_000, 946_684_799_999,
        ])
    func timestampRoundTrip(milliseconds: Int64) throws {
        try TestDatabase.with { database in
            try database.pool.withConnection { connection in
                let timestamp = Timestamp(milliseconds: milliseconds)
                try connection.execute(unsafeSQL: "CREATE TABLE t (at timestamptz NOT NULL)")
                try connection.query("INSERT INTO t (at) VALUES (\(timestamp))")
                let row = try #require(try connection.query("SELECT at, (extract(epoch FROM at) * 1000)::int8 FROM t").first)
                #expect(try row.decode(0, as: Timestamp.self) == timestamp)
                #expect(try row.decode(1, as: Int64.self) == milliseconds)
                let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
                #expect(try row.decode(0, as: Date.self) == date)
                // A Date (a Double of seconds) holds milliseconds exactly only within a few
                // centuries of 2001; there it binds to the same instant.
                if abs(milliseconds) < 10_000_000_000_000 {
                    let same = try #require(try connection.query("SELECT at = \(date) FROM t").first)
                    #expect(try same.decode(0, as: Bool.self))
                }
            }
        }
    }

    @Test("stored microseconds are truncated toward the past to the millisecond")
    func microsecondTruncation() throws {
        try TestDatabase.with { database in
            try database.pool.withConnection { connection in
                let row = try #require(
                    try connection.query(
                        "SELECT '2025-01-01 00:00:00.123999+00'::timestamptz, '1969-12-31 23:59:59.9995+00'::timestamptz, 'epoch'::timestamptz"
                    ).first
                )
                #expect(try row.decode(0, as: Timestamp.self).description == "2025-01-01T00:00:00.123Z")
                #expect(try row.decode(1, as: Timestamp.self).milliseconds == -1)
                #expect(try row.decode(2, as: Timestamp.self).milliseconds == 0)
                #expect(throws: PostgresError.self) {
                    try connection.query("SELECT 'infinity'::timestamptz").first?.decode(0, as: Timestamp.self)
                }
            }
        }
    }

    @Test("rows expose their columns, count and affected row counts")
    func rowsAndCounts() throws {
        try TestDatabase.with { database in
            try database.pool.withConnection { connection in
                try connection.execute(unsafeSQL: "CREATE TABLE n (v int4 NOT NULL); INSERT INTO n SELECT generate_series(1, 5)")
                let rows = try connection.query("SELECT v, v * 2 AS doubled FROM n ORDER BY v")
                #expect(rows.count == 5)
                #expect(rows.columns == [PostgresColumn(name: "v", dataType: .int4), PostgresColumn(name: "doubled", dataType: .int4)])
                #expect(try rows.map { try $0.decode(column: "doubled", as: Int.self) } == [2, 4, 6, 8, 10])
                #expect(try connection.query("UPDATE n SET v = v + 1 WHERE v > \(2)").affectedRowCount == 3)
                #expect(try connection.query("DELETE FROM n WHERE v > \(100)").affectedRowCount == 0)
            }
        }
    }
}
