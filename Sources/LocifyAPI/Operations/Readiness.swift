import Synchronization

/// Whether the server still wants new requests: set once on shutdown so `/health/ready` answers
/// 503 and a load balancer stops routing here before the listener closes.
final class Readiness: Sendable {
    private let draining = Atomic<Bool>(false)

    /// True once the shutdown has begun.
    var isDraining: Bool { draining.load(ordering: .acquiring) }

    /// Marks the server as draining; returns whether it already was.
    func beginDraining() -> Bool {
        draining.exchange(true, ordering: .acquiringAndReleasing)
    }
}
