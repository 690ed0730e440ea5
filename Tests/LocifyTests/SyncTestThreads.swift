import Foundation
import Synchronization

/// Runs blocking work on its own thread (never on the cooperative pool or
/// `DispatchQueue.global()`) and lets a test wait for it with a generous upper bound.
final class JoinableThread<Result: Sendable>: Sendable {
    private let finished = DispatchSemaphore(value: 0)
    private let outcome = Mutex<Swift.Result<Result, any Error>?>(nil)

    init(_ body: @escaping @Sendable () throws -> Result) {
        let thread = Thread { [self] in
            let result = Swift.Result { try body() }
            outcome.withLock { $0 = result }
            finished.signal()
        }
        thread.start()
    }

    /// Waits for the body (at most `timeout`) and returns its value or rethrows its error.
    func join(timeout: Duration = .seconds(120)) throws -> Result {
        guard finished.wait(timeout: .now() + Double(timeout.components.seconds)) == .success else {
            throw JoinTimeout()
        }
        finished.signal()  // later joins return at once
        guard let result = outcome.withLock({ $0 }) else { throw JoinTimeout() }
        return try result.get()
    }
}

struct JoinTimeout: Error {}

/// Polls `condition` every few milliseconds until it holds or `timeout` passes; returns whether it held.
func eventually(timeout: Duration = .seconds(30), _ condition: () throws -> Bool) rethrows -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: timeout)
    while clock.now < deadline {
        if try condition() { return true }
        Thread.sleep(forTimeInterval: 0.005)
    }
    return try condition()
}
