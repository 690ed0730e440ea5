/// An instant as whole milliseconds since 1970-01-01T00:00:00Z: the resolution the API stores,
/// compares and writes, shared by the server (domain and database layer) and `LocifyClient`.
///
/// Integer milliseconds keep comparisons exact and round-trip `timestamptz` exactly (PostgreSQL
/// keeps microseconds), unlike `Date`'s floating-point seconds; formatting needs no Foundation.
/// Reading the wall clock is left to each end (`Primitives` on the server, `Date` on a device).
public struct Timestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Milliseconds since 1970-01-01T00:00:00Z; negative before it.
    public var milliseconds: Int64

    /// The instant `milliseconds` after the Unix epoch.
    public init(milliseconds: Int64) {
        self.milliseconds = milliseconds
    }

    /// The Unix epoch: the timestamp of the server-provisioned default categories.
    public static let epoch = Timestamp(milliseconds: 0)

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
