import FoundationEssentials
import Primitives
import Synchronization

/// The answer of `/health/ready`, probed at most once per `maxAge` (openapi.yaml): a flood
/// of readiness checks costs one `SELECT 1` per second, not one database round trip each. While
/// one caller probes, the others get the last known answer at once (not ready before the first).
final class ReadinessCache: Sendable {
    private struct State {
        var ready = false
        var probedAt: Double?
        var probing = false
    }

    private let maxAge: Double
    private let probe: @Sendable () -> Bool
    private let clock: MonotonicClock
    private let state = Mutex(State())
    /// Held while probing, so callers with no answer yet can wait for the first one.
    private let firstProbe = Mutex(())

    /// - Parameters:
    ///   - maxAge: seconds an answer is reused. Default 1.
    ///   - probe: true when the database answers.
    init(
        maxAge: Double = 1, clock: MonotonicClock,
        probe: @escaping @Sendable () -> Bool
    ) {
        self.maxAge = maxAge
        self.clock = clock
        self.probe = probe
    }

    /// The readiness answer: cached when younger than `maxAge` or while another probe runs
    /// (before the first answer, callers wait for that probe rather than guess).
    func isReady() -> Bool {
        let time = clock.seconds()
        enum Step { case answer(Bool), probe, wait }
        let step: Step = state.withLock { state in
            if let probedAt = state.probedAt, time - probedAt < maxAge { return .answer(state.ready) }
            if state.probing { return state.probedAt == nil ? .wait : .answer(state.ready) }
            state.probing = true
            return .probe
        }
        switch step {
        case .answer(let ready):
            return ready
        case .wait:
            while true {
                firstProbe.withLock { _ in }
                // The prober may not hold the lock yet: look again until its answer is in.
                if let ready = state.withLock({ $0.probedAt == nil ? nil : $0.ready }) { return ready }
                DedicatedThread.sleep(for: .milliseconds(1))
            }
        case .probe:
            return firstProbe.withLock { _ in
                let ready = probe()
                let finished = clock.seconds()
                state.withLock { state in
                    state.ready = ready
                    state.probedAt = finished
                    state.probing = false
                }
                return ready
            }
        }
    }
}
