import Synchronization

/// The server-wide budget for request bodies held in memory (`maxBufferedBodyBytes`), shared
/// fairly among the clients holding it. A body holds the capacity of the buffer it is parsed into,
/// which grows with what has arrived of it (never with what it announces), charged to a holder:
/// the owner the application named when it admitted the body (e.g. the authenticated user), or
/// else the client's address. One holder holds at most its
/// share (`maxBufferedBodyBytesPerClient`). When the budget is full, a holder holding less than
/// an equal part of it (the budget over the number of holders) is still given room, as are the
/// next bytes of a body already arriving (up to an eighth beyond the budget), and the event loops
/// shed the slowest bodies of the holders holding more than that part until the
/// budget is kept again (`isOverCommitted`, `shed`): a handful of clients
/// trickling bodies can hold the budget only until someone else needs it. Past half the budget
/// (`isUnderPressure`) bodies must also keep up the minimum rate.
final class BodyBudget: Sendable {
    /// Whom held bytes are charged to.
    enum Holder: Hashable, Sendable {
        /// The client address (`ConnectionInfo.clientAddress`).
        case address(String)
        /// The owner named by `HTTPBodyAdmission.admit(owner:)`.
        case owner(String)
    }

    /// What became of a charge.
    enum Outcome: Equatable {
        case charged
        /// The budget is full and the holder holds at least its equal part of it: 503.
        case overBudget
        /// The holder would hold more than its share: 429.
        case overShare
    }

    private let budget: Int
    private let share: Int
    /// Holds the total held (`bufferedBodyBytes`), kept in step with `held` (updated under its
    /// lock) and read lock-free by the metrics and the loops.
    private let counters: ServerCounters
    private let held = Mutex<[Holder: Int]>([:])
    /// Each event loop's slowest sheddable body being received (its holder holds more than its
    /// part), as the loop last published it (`shedBodies`): a loop sheds a body only when none is
    /// slower elsewhere.
    private let slowestBodies = Mutex<[Int: ArrivingBody]>([:])

    /// What a body being received has shown of its pace: the bytes arrived since its admission.
    struct ArrivingBody: Sendable {
        let bytes: Int
        /// When it was admitted (the server's clock, nanoseconds).
        let since: Int64

        /// Its average rate at `now`, bytes per second.
        func rate(at now: Int64) -> Double {
            Double(bytes) * 1e9 / Double(max(1, now - since))
        }
    }

    init(budget: Int, share: Int, counters: ServerCounters) {
        self.budget = budget
        self.share = share
        self.counters = counters
    }

    /// Charges `bytes` (the growth of a body's buffer) to `holder`; nothing is charged unless the
    /// outcome is `.charged`. The next bytes of a body already arriving (`arriving`) are given room beyond a
    /// full budget, up to an eighth more, rather than cut: the loops then shed the slowest bodies.
    func charge(_ bytes: Int, to holder: Holder, arriving: Bool = false) -> Outcome {
        guard bytes > 0 else { return .charged }
        return held.withLock { held in
            var outcome = Self.outcome(of: bytes, to: holder, held: held, budget: budget, share: share, counters: counters)
            if outcome == .overBudget && arriving
                && bytes <= budget + budget / 8 - counters.bufferedBodyBytes.load(ordering: .relaxed)
            {
                outcome = .charged
            }
            if outcome == .charged {
                held[holder, default: 0] += bytes
                counters.bufferedBodyBytes.add(bytes, ordering: .relaxed)
            }
            return outcome
        }
    }

    /// What charging a first byte to `holder` would give, charging nothing: whether a body may
    /// start arriving.
    func outcomeOfStarting(for holder: Holder) -> Outcome {
        held.withLock { held in
            Self.outcome(of: 1, to: holder, held: held, budget: budget, share: share, counters: counters)
        }
    }

    private static func outcome(
        of bytes: Int, to holder: Holder, held: [Holder: Int], budget: Int, share: Int, counters: ServerCounters
    ) -> Outcome {
        let holding = held[holder, default: 0]
        guard bytes <= share - holding else { return .overShare }
        guard bytes > budget - counters.bufferedBodyBytes.load(ordering: .relaxed) else { return .charged }
        // Full: room only for a holder within its equal part, the newcomer counted.
        let holders = held.count + (holding == 0 ? 1 : 0)
        return holding + bytes <= budget / holders ? .charged : .overBudget
    }

    /// Returns `bytes` charged to `holder`.
    func release(_ bytes: Int, for holder: Holder) {
        guard bytes > 0 else { return }
        held.withLock { held in
            let remaining = held[holder, default: 0] - bytes
            held[holder] = remaining > 0 ? remaining : nil
            counters.bufferedBodyBytes.subtract(bytes, ordering: .relaxed)
        }
    }

    /// Publishes loop `loop`'s slowest sheddable body (nil: none), and returns the slowest rate
    /// at `now` of those the other loops published (`.infinity`: none).
    func publishSlowest(_ body: ArrivingBody?, loop: Int, now: Int64) -> Double {
        slowestBodies.withLock { bodies in
            bodies[loop] = body
            return bodies.filter { $0.key != loop }.values.map { $0.rate(at: now) }.min() ?? .infinity
        }
    }

    /// The holders whose bodies may be shed once one more client needs room: each holds more
    /// than an equal part of the budget among the holders and that newcomer.
    func sheddableHolders() -> Set<Holder> {
        held.withLock { held in
            let part = budget / (held.count + 1)
            return Set(held.filter { $0.value > part }.keys)
        }
    }

    /// More than the budget is held (room was given to holders within their part): the loops
    /// shed bodies until it is not.
    var isOverCommitted: Bool { counters.bufferedBodyBytes.load(ordering: .relaxed) > budget }

    /// More than half the budget is held: bodies slower than the minimum rate are cut.
    var isUnderPressure: Bool { counters.bufferedBodyBytes.load(ordering: .relaxed) > budget / 2 }

    /// Returns `bytes` charged to `holder` if more than the budget is held and `holder` holds more
    /// than an equal part of it (the budget over the number of holders): true when it did, and the
    /// body holding them is to be cut. Checked and released at once, so that loops shedding
    /// together shed no more than needed.
    func shed(_ bytes: Int, of holder: Holder) -> Bool {
        guard bytes > 0 else { return false }
        return held.withLock { held in
            let holding = held[holder, default: 0]
            guard counters.bufferedBodyBytes.load(ordering: .relaxed) > budget, holding > budget / max(1, held.count)
            else { return false }
            held[holder] = holding > bytes ? holding - bytes : nil
            counters.bufferedBodyBytes.subtract(bytes, ordering: .relaxed)
            return true
        }
    }
}
