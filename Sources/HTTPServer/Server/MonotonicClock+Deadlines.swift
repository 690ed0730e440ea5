import Primitives

extension MonotonicClock {
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
