import LocifyRules
import Primitives

/// `Timestamp` is bound and decoded as `timestamptz`, exactly: PostgreSQL keeps microseconds and
/// `Timestamp` milliseconds, so a value written by the server reads back unchanged.
extension Timestamp: PostgresEncodable, PostgresDecodable, PostgresArrayElement {
    /// Bound as `timestamptz`.
    public static var postgresDataType: PostgresDataType { .timestamptz }
    /// `[Timestamp]` binds as `timestamptz[]`.
    public static var postgresArrayDataType: PostgresDataType { PostgresDataType(rawValue: 1185) }

    /// Appends int64 microseconds since 2000-01-01, big-endian.
    public func encode(into buffer: inout [UInt8]) {
        buffer.appendBigEndian(postgresMicroseconds)
    }

    /// `timestamptz`, and `timestamp` read as UTC.
    public static func acceptsPostgresType(_ type: PostgresDataType) -> Bool {
        type == .timestamptz || type == .timestamp
    }

    /// Truncates the stored microseconds to the millisecond; `infinity` is a decoding error.
    public init(postgresBinary bytes: UnsafeRawBufferPointer, type: PostgresDataType) throws(PostgresError) {
        try expectLength(bytes, 8, type)
        var reader = PostgresBinaryReader(bytes)
        let micros = try reader.readInteger(as: Int64.self)
        guard micros != .max, micros != .min else {
            throw .decoding("infinite timestamp cannot be decoded")
        }
        self.init(postgresMicroseconds: micros)
    }
}

// MARK: - Wire format

extension Timestamp {
    /// Milliseconds between 1970-01-01 and PostgreSQL's epoch, 2000-01-01.
    static let postgresEpochOffsetMilliseconds: Int64 = 946_684_800_000

    /// Microseconds since 2000-01-01 as PostgreSQL stores them, saturating far outside its range.
    var postgresMicroseconds: Int64 {
        let (shifted, overflow) = milliseconds.subtractingReportingOverflow(Self.postgresEpochOffsetMilliseconds)
        if overflow { return .min }
        let (micros, multiplyOverflow) = shifted.multipliedReportingOverflow(by: 1000)
        if multiplyOverflow { return shifted > 0 ? .max : .min }
        return micros
    }

    /// The millisecond containing a PostgreSQL microsecond value (truncated toward the past).
    init(postgresMicroseconds micros: Int64) {
        self.init(milliseconds: Self.floorDivide(micros, 1000).quotient + Self.postgresEpochOffsetMilliseconds)
    }
}
