import Glibc

/// An instant as whole milliseconds since 1970-01-01T00:00:00Z: the resolution the API stores,
/// compares and writes, shared by the domain and the database layer.
///
/// Integer milliseconds keep comparisons exact and round-trip `timestamptz` exactly (PostgreSQL
/// keeps microseconds), unlike `Date`'s floating-point seconds; formatting needs no Foundation.
public struct Timestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Milliseconds since 1970-01-01T00:00:00Z; negative before it.
    public var milliseconds: Int64

    /// The instant `milliseconds` after the Unix epoch.
    public init(milliseconds: Int64) {
        self.milliseconds = milliseconds
    }

    /// The Unix epoch: the timestamp of the server-provisioned default categories.
    public static let epoch = Timestamp(milliseconds: 0)

    /// The current wall-clock time (`CLOCK_REALTIME`), truncated to milliseconds.
    public static func now() -> Timestamp {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Timestamp(milliseconds: Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000)
    }

    /// The same instant plus `milliseconds`, saturating at Int64's range instead of trapping.
    public func adding(milliseconds delta: Int64) -> Timestamp {
        let (sum, overflow) = milliseconds.addingReportingOverflow(delta)
        if overflow { return Timestamp(milliseconds: delta > 0 ? .max : .min) }
        return Timestamp(milliseconds: sum)
    }

    /// Earlier instants order first.
    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
        lhs.milliseconds < rhs.milliseconds
    }

    /// The RFC 3339 form the API writes, e.g. `2024-05-01T12:00:00.000Z`.
    public var description: String { rfc3339 }
}
