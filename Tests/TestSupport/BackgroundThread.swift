import Dispatch
import Foundation
import Primitives
import Synchronization

/// Runs blocking work on its own thread (never on the cooperative pool or
/// `DispatchQueue.global()`) and lets a test wait for it with a generous upper bound.
public final class BackgroundThread<Result: Sendable>: Sendable {
    private let finished = DispatchSemaphore(value: 0)
    private let outcome = Mutex<Swift.Result<Result, any Error>?>(nil)

    /// Starts `body` on a new thread at once.
    public init(_ body: @escaping @Sendable () throws -> Result) {
        let thread = Thread { [self] in
            let result = Swift.Result { try body() }
            outcome.withLock { $0 = result }
            finished.signal()
        }
        thread.start()
    }

    /// Waits for the body (at most `timeout`) and returns its value or rethrows its error.
    public func join(timeout: Duration = .seconds(120)) throws -> Result {
        guard wait(timeout: timeout), let result = outcome.withLock({ $0 }) else { throw BackgroundThreadTimeout() }
        return try result.get()
    }

    /// Waits for the body (at most `timeout`); false if it had not finished by then.
    @discardableResult
    public func wait(timeout: Duration = .seconds(30)) -> Bool {
        guard finished.wait(timeout: .now() + .milliseconds(Int(clamping: max(0, timeout.milliseconds)))) == .success else { return false }
        finished.signal()  // later waits return at once
        return true
    }
}

/// A `BackgroundThread` did not finish within the time a test allowed it.
public struct BackgroundThreadTimeout: Error {}

/// Polls `condition` every 10 ms until it holds or `timeout` passes (a generous upper bound, never
/// a speed assertion); returns its last value.
public func eventually(timeout: Duration = .seconds(60), _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try condition() { return true }
        Thread.sleep(forTimeInterval: 0.01)
    }
    return try condition()
}

/// Runs blocking `work` (floods, sleeps, blocking sockets) on a thread of its own and waits for it
/// without holding one of Swift concurrency's cooperative threads: a synchronous test runs on
/// one, and on a 2-core machine two long ones stall every async test meanwhile. `work` reports
/// what it measured; the test asserts on it afterwards (an `#expect` off the test's task would
/// not be attributed to the test).
public func onOwnThread<Result: Sendable>(_ work: @escaping @Sendable () throws -> Result) async throws -> Result {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Swift.Result { try work() }) }.start()
    }
}
