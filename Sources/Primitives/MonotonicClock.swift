import Glibc

/// The server's one monotonic clock: time since an arbitrary fixed origin, never going backwards,
/// for timeouts, rate-limit refills and request durations. Built once in the composition root
/// (`ApplicationDependencies.monotonicClock`) and passed to every part that measures time, so
/// tests move time by hand instead of sleeping.
public struct MonotonicClock: Sendable {
    private let readNow: @Sendable () -> Duration

    /// A clock reading `now` (time since an arbitrary fixed origin; must never go backwards).
    public init(now: @escaping @Sendable () -> Duration) {
        readNow = now
    }

    /// The current time since the clock's origin.
    public func now() -> Duration { readNow() }

    /// The current time since the clock's origin, in (fractional) seconds.
    public func seconds() -> Double { readNow().seconds }

    /// `CLOCK_MONOTONIC`: the production clock.
    public static let system = MonotonicClock {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
    }
}
