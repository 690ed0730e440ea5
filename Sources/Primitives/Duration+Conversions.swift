// Duration in the units the server hands to C calls, SQL settings, logs and metrics. One meaning
// per name: `milliseconds`/`nanoseconds` are whole and saturating (for timeouts and deadlines),
// `seconds`/`fractionalMilliseconds` are fractional `Double`s (for logs, metrics, sleeps).

extension Duration {
    /// The duration in whole milliseconds (truncated toward zero), saturating at Int64's range.
    public var milliseconds: Int64 {
        wholeUnits(perSecond: 1000)
    }

    /// The duration in whole nanoseconds (truncated toward zero), saturating at Int64's range.
    public var nanoseconds: Int64 {
        wholeUnits(perSecond: 1_000_000_000)
    }

    /// The duration in fractional seconds (to `Double` precision).
    public var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// The duration in fractional milliseconds, rounded to whole microseconds (the `duration_ms`
    /// of request logs). Named apart from `milliseconds`, which is whole milliseconds.
    public var fractionalMilliseconds: Double {
        (seconds * 1_000_000).rounded() / 1000
    }

    private func wholeUnits(perSecond: Int64) -> Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: perSecond)
        guard !overflow else { return seconds > 0 ? .max : .min }
        let fraction = attoseconds / (1_000_000_000_000_000_000 / perSecond)
        let (total, sumOverflow) = scaled.addingReportingOverflow(fraction)
        guard !sumOverflow else { return seconds > 0 ? .max : .min }
        return total
    }
}
