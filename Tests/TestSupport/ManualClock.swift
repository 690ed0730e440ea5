import Primitives
import HTTPServer
import LocifyRules
import Synchronization

/// A clock tests move by hand: unix seconds (`Double`), server time (`Timestamp`) or monotonic
/// time (`Duration`), whatever the clock under test reads.
public final class ManualClock<Value: Sendable>: Sendable {
    private let current: Mutex<Value>

    /// A clock standing at `start` until advanced.
    public init(_ start: Value) {
        current = Mutex(start)
    }

    /// The time now.
    public var now: Value { current.withLock { $0 } }

    /// Sets the time.
    public func set(_ value: Value) {
        current.withLock { $0 = value }
    }

    /// The clock as the closure the production types take.
    public var closure: @Sendable () -> Value { { self.now } }
}

extension ManualClock where Value == Double {
    /// A unix-seconds clock starting at `start`.
    public convenience init() { self.init(1_750_000_000) }

    /// Moves the clock forward by `seconds`.
    public func advance(by seconds: Double) {
        current.withLock { $0 += seconds }
    }

    /// The clock as the server's wall clock (unix seconds): the services, the token verifier,
    /// Google's clients, and the tokens a test mints.
    public var wallClock: WallClock { WallClock { [self] in .seconds(now) } }

    /// The clock as a monotonic clock (seconds since its origin), for the rate limiters.
    public var monotonic: MonotonicClock { MonotonicClock { [self] in .seconds(now) } }
}

extension ManualClock where Value == Timestamp {
    /// The clock as the server's wall clock (the records' time, to the millisecond).
    public var wallClock: WallClock { WallClock { [self] in .milliseconds(now.milliseconds) } }
}

extension ManualClock where Value == Duration {
    /// The monotonic clock (`MonotonicClock`; the HTTP server's), driven by hand.
    public var httpClock: MonotonicClock { MonotonicClock { [self] in now } }

    /// Moves the clock forward by `duration`.
    public func advance(by duration: Duration) {
        current.withLock { $0 += duration }
    }
}
