import Synchronization

/// Tokens that already passed verification, keyed by the SHA-256 of the token text.
///
/// Bounded: when full, expired entries are dropped first, then the oldest, in batches of a tenth
/// of the capacity so the sweep's cost is amortised. An entry is valid until `exp + skew`.
final class VerifiedTokenCache: Sendable {
    enum Lookup: Equatable {
        case hit(VerifiedIDToken)
        case expired
        case miss
    }

    private struct Entry {
        var token: VerifiedIDToken
        var validUntil: Double
        var sequence: UInt64
    }

    private struct State {
        var entries: [SHA256Digest: Entry] = [:]
        /// Insertion order; stale pairs (removed or replaced entries) are skipped.
        var order: [(digest: SHA256Digest, sequence: UInt64)] = []
        var head = 0
        var nextSequence: UInt64 = 0
    }

    let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    var count: Int { state.withLock { $0.entries.count } }

    func lookup(_ digest: SHA256Digest, now: Double) -> Lookup {
        guard capacity > 0 else { return .miss }
        return state.withLock { state in
            guard let entry = state.entries[digest] else { return .miss }
            if entry.validUntil < now {
                state.entries[digest] = nil
                return .expired
            }
            return .hit(entry.token)
        }
    }

    func insert(_ digest: SHA256Digest, token: VerifiedIDToken, validUntil: Double, now: Double) {
        guard capacity > 0 else { return }
        state.withLock { state in
            if state.entries[digest] == nil, state.entries.count >= capacity {
                makeRoom(&state, now: now)
            }
            let sequence = state.nextSequence
            state.nextSequence += 1
            state.entries[digest] = Entry(token: token, validUntil: validUntil, sequence: sequence)
            state.order.append((digest, sequence))
            if state.order.count - state.head > 2 * capacity + 16 { rebuildOrder(&state) }
        }
    }

    private func makeRoom(_ state: inout State, now: Double) {
        let batch = max(1, capacity / 10)
        state.entries = state.entries.filter { $0.value.validUntil >= now }
        rebuildOrder(&state)
        while state.entries.count > capacity - batch, state.head < state.order.count {
            let oldest = state.order[state.head]
            state.head += 1
            if state.entries[oldest.digest]?.sequence == oldest.sequence {
                state.entries[oldest.digest] = nil
            }
        }
        if state.head > state.order.count / 2 { rebuildOrder(&state) }
    }

    private func rebuildOrder(_ state: inout State) {
        state.order = state.entries.map { ($0.key, $0.value.sequence) }.sorted { $0.sequence < $1.sequence }
        state.head = 0
    }
}
