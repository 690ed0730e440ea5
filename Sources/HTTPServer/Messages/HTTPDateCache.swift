import Glibc
import Primitives
import Synchronization

/// The `Date` header line (`Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n`, RFC 9110 5.6.7), formatted
/// at most once per second and shared by every thread; no Foundation date formatting per request.
final class HTTPDateCache: Sendable {
    private struct Cached {
        var second: Int = -1
        var line: [UInt8] = []
    }

    private let clock: WallClock
    private let cached = Mutex(Cached())

    /// A cache of the dates `clock` reads (the configuration's `wallClock`).
    init(clock: WallClock) {
        self.clock = clock
    }

    /// The header line for the current second of the clock, CRLF included.
    func currentLine() -> [UInt8] {
        let now = Int(clock.seconds().rounded(.down))
        return cached.withLock { cache in
            if cache.second != now {
                cache.second = now
                cache.line = Self.formatLine(epochSeconds: now)
            }
            return cache.line
        }
    }

    private static let dayNames: [StaticString] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let monthNames: [StaticString] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]

    /// Formats `Date: <IMF-fixdate>\r\n` for a Unix time.
    static func formatLine(epochSeconds: Int) -> [UInt8] {
        var seconds = time_t(epochSeconds)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        var line: [UInt8] = []
        line.reserveCapacity(37)
        func append(_ text: StaticString) {
            line.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
        }
        func appendTwoDigits(_ value: Int32) {
            line.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: value / 10 % 10))
            line.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: value % 10))
        }
        append("Date: ")
        append(dayNames[Int(parts.tm_wday) % 7])
        append(", ")
        appendTwoDigits(parts.tm_mday)
        line.append(UInt8(ascii: " "))
        append(monthNames[Int(parts.tm_mon) % 12])
        line.append(UInt8(ascii: " "))
        let year = parts.tm_year + 1900
        appendTwoDigits(year / 100)
        appendTwoDigits(year % 100)
        line.append(UInt8(ascii: " "))
        appendTwoDigits(parts.tm_hour)
        line.append(UInt8(ascii: ":"))
        appendTwoDigits(parts.tm_min)
        line.append(UInt8(ascii: ":"))
        appendTwoDigits(parts.tm_sec)
        append(" GMT\r\n")
        return line
    }
}
