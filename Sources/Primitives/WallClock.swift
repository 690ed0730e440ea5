import Glibc
import LocifyRules

/// The server's one wall clock: the time since the unix epoch, for what the outside world dates
/// (record stamps, tombstones, ID tokens' `exp`/`iat`, Google's key and access-token lifetimes).
/// Built once in the composition root (`ApplicationDependencies.wallClock`) and passed to every
/// part that reads the date, so tests move one clock and everything, tokens included, follows.
public struct WallClock: Sendable {
    private let readNow: @Sendable () -> Duration

    /// A clock reading `sinceEpoch` (the time since 1970-01-01T00:00:00Z).
    public init(sinceEpoch: @escaping @Sendable () -> Duration) {
        readNow = sinceEpoch
    }

    /// The current time, truncated to milliseconds: the instant the API stores and writes.
    public func now() -> Timestamp { Timestamp(milliseconds: readNow().milliseconds) }

    /// The current time in (fractional) unix seconds, as JWT claims and HTTP lifetimes count.
    public func seconds() -> Double { readNow().seconds }

    /// `CLOCK_REALTIME`: the production clock.
    public static let system = WallClock {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
    }
}
