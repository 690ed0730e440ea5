import Synchronization

/// One eviction at `maxConnections`, started by the acceptor for each client it admits beyond the
/// limit: every event loop offers its best candidate among the connections of `addresses` (those
/// holding the most connections), and the loop whose candidate ranks first closes it. Busy
/// connections are candidates too: otherwise connections that are never idle (a request head
/// trickled, a response read slowly, a long-poll held) would keep every new client out.
final class EvictionRound: Sendable {
    /// How a connection ranks as a candidate: by `kind`, then by `order` (lower goes first).
    struct Rank: Comparable {
        /// What the connection is doing, cheapest to close first.
        enum Kind: Int, Comparable {
            /// Waiting for a request: nothing is lost. Ordered by the wait's start.
            case idle
            /// Receiving a request head: nothing was answered yet. Ordered by the head's start.
            case receivingHead
            /// Reading a response the socket cannot take: slowest reader first (bytes per second).
            case readingSlowly
            /// A held long-poll: answered with its timeout answer, then closed.
            case holdingWait
            /// Receiving a body: answered 503, slowest first (bytes per second).
            case receivingBody
            /// A request being answered: closed after its response.
            case answering
            /// Accepted moments ago (`EventLoop.minimumAgeBeforeEviction`): it has its chance to
            /// send. Oldest first.
            case new

            static func < (lhs: Kind, rhs: Kind) -> Bool { lhs.rawValue < rhs.rawValue }
        }

        let kind: Kind
        let order: Double

        static func < (lhs: Rank, rhs: Rank) -> Bool { (lhs.kind, lhs.order) < (rhs.kind, rhs.order) }
    }

    private struct Offers {
        var replies = 0
        var best: (rank: Rank, loop: Int)?
    }

    /// The addresses whose connections may be closed.
    let addresses: Set<String>
    private let loops: [EventLoop]
    private let offers = Mutex(Offers())

    init(addresses: Set<String>, loops: [EventLoop]) {
        self.addresses = addresses
        self.loops = loops
    }

    /// Asks every loop for its candidate.
    func start() {
        for (index, loop) in loops.enumerated() where !loop.offerEviction(self) {
            offer(nil, fromLoop: index)  // stopped
        }
    }

    /// A loop's best candidate (nil: none). The last offer hands the eviction to the loop with the
    /// best, which closes its best candidate at that moment.
    func offer(_ rank: Rank?, fromLoop index: Int) {
        let chosen = offers.withLock { offers -> Int? in
            offers.replies += 1
            if let rank, offers.best.map({ rank < $0.rank }) ?? true { offers.best = (rank, index) }
            return offers.replies == loops.count ? offers.best?.loop : nil
        }
        if let chosen { loops[chosen].evict(self) }
    }
}
