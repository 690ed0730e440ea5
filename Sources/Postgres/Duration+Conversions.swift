extension Duration {
    /// The duration in whole milliseconds (rounded down), saturating at Int64's range.
    var milliseconds: Int64 {
        wholeUnits(perSecond: 1000)
    }

    /// The duration in whole nanoseconds (rounded down), saturating at Int64's range.
    var nanoseconds: Int64 {
        wholeUnits(perSecond: 1_000_000_000)
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
