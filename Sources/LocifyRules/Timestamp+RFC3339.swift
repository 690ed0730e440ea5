// RFC 3339 text of a `Timestamp` (section 5.6), in and out, and the proleptic Gregorian calendar
// arithmetic both directions need. Bytes only: no Foundation formatter on the hot path.

extension Timestamp {
    /// `YYYY-MM-DDTHH:MM:SS.mmmZ`, always UTC with exactly three fraction digits. Instants outside
    /// years 0000-9999 (which `init(rfc3339:)` never yields) still render, with more year digits or
    /// a leading `-`, rather than trap.
    public var rfc3339: String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        appendRFC3339(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the RFC 3339 form (see `rfc3339`) to `bytes` without intermediate strings: the
    /// 24 bytes are written into a stack buffer and appended at once (this runs for every timestamp
    /// of every response).
    public func appendRFC3339(to bytes: inout [UInt8]) {
        let (days, msOfDay) = Timestamp.floorDivide(milliseconds, 86_400_000)
        let (year, month, day) = Timestamp.civilDate(fromDaysSinceEpoch: days)
        let yearFits = (0...9999).contains(year)
        if !yearFits {
            if year < 0 { bytes.append(UInt8(ascii: "-")) }
            Timestamp.appendDigits(year.magnitude, count: 4, to: &bytes)
        }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 24) { text in
            func put(_ value: Int64, digits: Int, at offset: Int) {
                var rest = value
                for index in stride(from: offset + digits - 1, through: offset, by: -1) {
                    text[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
                    rest /= 10
                }
            }
            if yearFits { put(year, digits: 4, at: 0) }
            text[4] = UInt8(ascii: "-")
            put(month, digits: 2, at: 5)
            text[7] = UInt8(ascii: "-")
            put(day, digits: 2, at: 8)
            text[10] = UInt8(ascii: "T")
            put(msOfDay / 3_600_000, digits: 2, at: 11)
            text[13] = UInt8(ascii: ":")
            put(msOfDay / 60_000 % 60, digits: 2, at: 14)
            text[16] = UInt8(ascii: ":")
            put(msOfDay / 1000 % 60, digits: 2, at: 17)
            text[19] = UInt8(ascii: ".")
            put(msOfDay % 1000, digits: 3, at: 20)
            text[23] = UInt8(ascii: "Z")
            // An out-of-range year was appended above.
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: text[(yearFits ? 0 : 4)...]))
        }
    }

    /// Appends `value` as exactly `count` zero-padded digits, or more if it needs them.
    private static func appendDigits(_ value: UInt64, count: Int, to bytes: inout [UInt8]) {
        var divisor: UInt64 = 1
        for _ in 1..<count { divisor *= 10 }
        while value / divisor >= 10 { divisor *= 10 }
        while divisor > 0 {
            bytes.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
            divisor /= 10
        }
    }

    /// Floor division with a non-negative remainder (for instants before 1970).
    public static func floorDivide(_ value: Int64, _ divisor: Int64) -> (quotient: Int64, remainder: Int64) {
        let (quotient, remainder) = value.quotientAndRemainder(dividingBy: divisor)
        return remainder < 0 ? (quotient - 1, remainder + divisor) : (quotient, remainder)
    }

    /// Howard Hinnant's `civil_from_days` (proleptic Gregorian calendar).
    static func civilDate(fromDaysSinceEpoch days: Int64) -> (year: Int64, month: Int64, day: Int64) {
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

    /// The inverse of `civilDate`: days since 1970-01-01 of a proleptic Gregorian date
    /// (Howard Hinnant's `days_from_civil`).
    static func daysSinceEpoch(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = floorDivide(y, 400).quotient
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}

extension Timestamp {
    /// Parses any RFC 3339 date-time (`T` or `t` or space separator, any fraction length,
    /// `Z`/`z` or a numeric offset), truncating the fraction to milliseconds. Returns nil for
    /// anything else, including impossible dates such as February 30th and instants outside
    /// 0000-01-01T00:00:00Z...9999-12-31T23:59:59.999Z (which the output form cannot write).
    public init?(rfc3339 text: String) {
        guard let parsed = Timestamp.parse(Array(text.utf8)) else { return nil }
        self.init(milliseconds: parsed)
    }

    private static func parse(_ b: [UInt8]) -> Int64? {
        // date-time = full-date "T" full-time  (RFC 3339 section 5.6)
        guard b.count >= 20 else { return nil }
        func digits(_ start: Int, _ count: Int) -> Int64? {
            guard start + count <= b.count else { return nil }
            var value: Int64 = 0
            for i in start..<(start + count) {
                let c = b[i]
                guard c >= 0x30 && c <= 0x39 else { return nil }
                value = value * 10 + Int64(c - 0x30)
            }
            return value
        }
        guard let year = digits(0, 4), b[4] == UInt8(ascii: "-"),
            let month = digits(5, 2), b[7] == UInt8(ascii: "-"),
            let day = digits(8, 2),
            b[10] == UInt8(ascii: "T") || b[10] == UInt8(ascii: "t") || b[10] == UInt8(ascii: " "),
            let hour = digits(11, 2), b[13] == UInt8(ascii: ":"),
            let minute = digits(14, 2), b[16] == UInt8(ascii: ":"),
            let second = digits(17, 2)
        else { return nil }
        guard (1...12).contains(month), day >= 1, day <= daysInMonth(year: year, month: month),
            hour <= 23, minute <= 59, second <= 60
        else { return nil }
        var index = 19
        var millis: Int64 = 0
        if index < b.count, b[index] == UInt8(ascii: ".") {
            index += 1
            let fractionStart = index
            var scale: Int64 = 100
            while index < b.count, b[index] >= 0x30, b[index] <= 0x39 {
                millis += Int64(b[index] - 0x30) * scale
                scale /= 10
                index += 1
            }
            guard index > fractionStart else { return nil }
        }
        guard index < b.count else { return nil }
        var offsetMinutes: Int64 = 0
        switch b[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            index += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            let sign: Int64 = b[index] == UInt8(ascii: "+") ? 1 : -1
            guard let offsetHours = digits(index + 1, 2), index + 3 < b.count, b[index + 3] == UInt8(ascii: ":"),
                let offsetMins = digits(index + 4, 2), offsetHours <= 23, offsetMins <= 59
            else { return nil }
            offsetMinutes = sign * (offsetHours * 60 + offsetMins)
            index += 6
        default:
            return nil
        }
        guard index == b.count else { return nil }
        // A leap second (:60) is folded into the next second, as most systems do.
        let days = daysSinceEpoch(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetMinutes * 60
        let milliseconds = seconds * 1000 + millis
        // Only instants the output form can write (a four-digit year in UTC) are accepted: an
        // offset or leap second can push a date at either end of 0000-9999 outside it, and such an
        // instant would not render as the API promises (found by fuzzing).
        guard representableRange.contains(milliseconds) else { return nil }
        return milliseconds
    }

    /// 0000-01-01T00:00:00.000Z ... 9999-12-31T23:59:59.999Z, in milliseconds since the epoch.
    static let representableRange: ClosedRange<Int64> = -62_167_219_200_000...253_402_300_799_999

    private static func daysInMonth(year: Int64, month: Int64) -> Int64 {
        switch month {
        case 2:
            let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
            return leap ? 29 : 28
        case 4, 6, 9, 11:
            return 30
        default:
            return 31
        }
    }
}
