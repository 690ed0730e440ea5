import Primitives
import Synchronization

/// Counts a recurring event and lets at most one log line per `interval` report it, so an event
/// a client can trigger at will (a flood of refused requests) cannot fill the disk.
final class SampledLog: Sendable {
    private struct State {
        var count = 0
        var windowStart: Double?
    }

    private let interval: Double
    private let clock: MonotonicClock
    private let state = Mutex(State())

    /// - Parameter interval: seconds between two lines. Default 10.
    init(interval: Double = 10, clock: MonotonicClock) {
        self.interval = interval
        self.clock = clock
    }

    /// Counts one event; calls `log` with the events counted and the seconds they span when the
    /// previous line is at least `interval` old (the first event is logged at once).
    func note(_ log: (_ count: Int, _ seconds: Double) -> Void) {
        let time = clock.seconds()
        let due: (Int, Double)? = state.withLock { state in
            state.count += 1
            if let start = state.windowStart, time - start < interval { return nil }
            let report = (state.count, state.windowStart.map { time - $0 } ?? 0)
            state.count = 0
            state.windowStart = time
            return report
        }
        if let due { log(due.0, due.1) }
    }
}
