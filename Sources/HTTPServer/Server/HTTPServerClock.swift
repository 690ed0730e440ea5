import Glibc
import Primitives

/// The monotonic clock the server measures its timeouts with. Injected through the
/// configuration so tests can move time by hand instead of sleeping.
public struct HTTPServerClock: Sendable {
    private let readNow: @Sendable () -> Duration

    /// A clock reading `now` (time since an arbitrary fixed origin; must never go backwards).
    public init(now: @escaping @Sendable () -> Duration) {
        readNow = now
    }

    /// The current time since the clock's origin.
    public func now() -> Duration { readNow() }

    /// `CLOCK_MONOTONIC`: the default.
    public static let monotonic = HTTPServerClock {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
    }

    /// Nanoseconds since the origin, clamped at zero, for cheap deadline arithmetic.
    func nowNanoseconds() -> Int64 {
        now().nanosecondsClamped
    }
}

extension Duration {
    /// The duration in whole nanoseconds, clamped to `0...Int64.max` (a negative timeout is none).
    var nanosecondsClamped: Int64 {
        max(0, nanoseconds)
    }
}
