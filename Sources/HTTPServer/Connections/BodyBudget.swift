import Synchronization

/// The server-wide budget for request bodies held in memory (`maxBufferedBodyBytes`), and the
/// share of it each client may hold (`maxBufferedBodyBytesPerClient`) with bodies received after
/// their head: a client being the owner the application named when it admitted the body (e.g.
/// the authenticated user), or else the address the body came from. The shares keep one host, or
/// one account, from holding the whole budget with slow uploads while everybody else's writes
/// are refused. A body that arrived whole with its head cannot trickle: it has no holder and
/// counts only against the budget.
final class BodyBudget: Sendable {
    /// Whom reserved bytes are charged to.
    enum Holder: Hashable, Sendable {
        /// The client address (`ConnectionInfo.clientAddress`).
        case address(String)
        /// The owner named by `HTTPBodyAdmission.admit(owner:)`.
        case owner(String)
    }

    /// What became of a reservation.
    enum Outcome: Equatable {
        case reserved
        /// The server-wide budget is used up: 503.
        case overBudget
        /// There is room, but the holder already holds its share: 429.
        case overShare
    }

    private let budget: Int
    private let share: Int
    /// Holds the total reserved (`bufferedBodyBytes`), kept in step with `held` (updated under
    /// its lock) and read lock-free by the metrics.
    private let counters: ServerCounters
    private let held = Mutex<[Holder: Int]>([:])

    init(budget: Int, share: Int, counters: ServerCounters) {
        self.budget = budget
        self.share = share
        self.counters = counters
    }

    /// Reserves `bytes` for `holder` (nil: no share); nothing is reserved unless the outcome is
    /// `.reserved`.
    func reserve(_ bytes: Int, for holder: Holder?) -> Outcome {
        guard bytes > 0 else { return .reserved }
        return held.withLock { held in
            // The server being full comes first: 429 only while others can still be admitted.
            guard bytes <= budget - counters.bufferedBodyBytes.load(ordering: .relaxed) else { return .overBudget }
            if let holder {
                let holding = held[holder, default: 0]
                guard bytes <= share - holding else { return .overShare }
                held[holder] = holding + bytes
            }
            counters.bufferedBodyBytes.add(bytes, ordering: .relaxed)
            return .reserved
        }
    }

    /// Returns `bytes` reserved for `holder`.
    func release(_ bytes: Int, for holder: Holder?) {
        guard bytes > 0 else { return }
        held.withLock { held in
            if let holder {
                let remaining = held[holder, default: 0] - bytes
                held[holder] = remaining > 0 ? remaining : nil
            }
            counters.bufferedBodyBytes.subtract(bytes, ordering: .relaxed)
        }
    }
}
