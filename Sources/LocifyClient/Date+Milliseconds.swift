import Foundation
import LocifyRules

extension Date {
    /// Whole milliseconds since the Unix epoch, rounded down: the server's precision. (A hundredth
    /// of a millisecond is added first so that a date made from whole milliseconds, whose `Double`
    /// may fall a hair below them, gives them back.)
    public var locifyMilliseconds: Int64 { Int64((timeIntervalSince1970 * 1000 + 0.01).rounded(.down)) }

    /// The date of `milliseconds` since the Unix epoch.
    public init(locifyMilliseconds milliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    /// This date as the API's millisecond `Timestamp` (LocifyRules, shared with the server).
    var timestamp: Timestamp { Timestamp(milliseconds: locifyMilliseconds) }

    /// The RFC 3339 form the server writes and reads, at millisecond precision.
    var rfc3339: String { timestamp.rfc3339 }
}
