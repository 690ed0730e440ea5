import Foundation

/// An instant as whole milliseconds since 1970-01-01T00:00:00Z, bound and decoded as `timestamptz`.
///
/// Use it for every stored timestamp: it round-trips exactly (PostgreSQL keeps microseconds, this
/// keeps milliseconds, so nothing is lost either way), unlike `Date`'s floating-point seconds.
public struct PostgresTimestamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Milliseconds since 1970-01-01T00:00:00Z; negative before it.
    public var millisecondsSince1970: Int64

    /// Wraps a count of milliseconds since the Unix epoch.
    public init(millisecondsSince1970: Int64) {
        self.millisecondsSince1970 = millisecondsSince1970
    }

    /// The millisecond containing `date` (sub-millisecond parts are truncated toward the past).
    public init(_ date: Date) {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded(.down)
        self.init(millisecondsSince1970: Int64(saturating: milliseconds))
    }

    /// The current time truncated to the millisecond.
    public static func now() -> PostgresTimestamp {
        PostgresTimestamp(Date())
    }

    /// The same instant as a `Date`.
    public var date: Date {
        Date(timeIntervalSince1970: Double(millisecondsSince1970) / 1000)
    }

    /// This instant plus `milliseconds` (saturating at the representable range).
    public func adding(milliseconds: Int64) -> PostgresTimestamp {
        let (sum, overflow) = millisecondsSince1970.addingReportingOverflow(milliseconds)
        if overflow {
            return PostgresTimestamp(millisecondsSince1970: milliseconds > 0 ? .max : .min)
        }
        return PostgresTimestamp(millisecondsSince1970: sum)
    }

    /// Earlier instants sort first.
    public static func < (lhs: PostgresTimestamp, rhs: PostgresTimestamp) -> Bool {
        lhs.millisecondsSince1970 < rhs.millisecondsSince1970
    }

    /// RFC 3339 in UTC with milliseconds, e.g. `2025-05-31T23:15:00.123Z` (years 0000-9999).
    public var description: String {
        let (days, millisecondOfDay) = Self.floorDivide(millisecondsSince1970, 86_400_000)
        let (year, month, day) = Self.civilDate(fromDaysSince1970: days)
        let hour = millisecondOfDay / 3_600_000
        let minute = millisecondOfDay / 60_000 % 60
        let second = millisecondOfDay / 1000 % 60
        let millisecond = millisecondOfDay % 1000
        return Self.pad(year, 4) + "-" + Self.pad(month, 2) + "-" + Self.pad(day, 2) + "T"
            + Self.pad(hour, 2) + ":" + Self.pad(minute, 2) + ":" + Self.pad(second, 2) + "."
            + Self.pad(millisecond, 3) + "Z"
    }

    // MARK: - Wire format

    /// Milliseconds between 1970-01-01 and PostgreSQL's epoch, 2000-01-01.
    static let postgresEpochOffsetMilliseconds: Int64 = 946_684_800_000

    /// Microseconds since 2000-01-01 as PostgreSQL stores them, saturating far outside its range.
    var postgresMicroseconds: Int64 {
        let (shifted, overflow) = millisecondsSince1970.subtractingReportingOverflow(Self.postgresEpochOffsetMilliseconds)
        if overflow { return .min }
        let (micros, multiplyOverflow) = shifted.multipliedReportingOverflow(by: 1000)
        if multiplyOverflow { return shifted > 0 ? .max : .min }
        return micros
    }

    /// The millisecond containing a PostgreSQL microsecond value (truncated toward the past).
    init(postgresMicroseconds micros: Int64) {
        let (milliseconds, _) = Self.floorDivide(micros, 1000)
        self.init(millisecondsSince1970: milliseconds + Self.postgresEpochOffsetMilliseconds)
    }

    // MARK: - Calendar arithmetic

    static func floorDivide(_ value: Int64, _ divisor: Int64) -> (quotient: Int64, remainder: Int64) {
        let (quotient, remainder) = value.quotientAndRemainder(dividingBy: divisor)
        return remainder < 0 ? (quotient - 1, remainder + divisor) : (quotient, remainder)
    }

    /// Proleptic Gregorian date of a day count (Howard Hinnant's `civil_from_days`).
    static func civilDate(fromDaysSince1970 days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = days + 719_468
        let era = floorDivide(shifted, 146_097).quotient
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value.magnitude)
        let padded = String(repeating: "0", count: max(0, width - digits.count)) + digits
        return value < 0 ? "-" + padded : padded
    }
}

extension Int64 {
    /// The integral part of `value`, clamped to Int64's range (NaN becomes 0).
    init(saturating value: Double) {
        if value.isNaN {
            self = 0
        } else if value >= 0x1p63 {
            self = .max
        } else if value <= -0x1p63 {
            self = .min
        } else {
            self = Int64(value)
        }
    }
}
