import Dispatch
import Foundation
import Synchronization

/// Runs `body(thread)` on `count` dedicated threads released together (never on
/// `DispatchQueue.global()`), and waits for all of them. The first error a body threw is rethrown
/// once every thread has ended.
public func runOnThreads(_ count: Int, _ body: @escaping @Sendable (Int) throws -> Void) throws {
    let ready = DispatchGroup()
    let finished = DispatchGroup()
    let go = DispatchSemaphore(value: 0)
    let failures = Locked<[any Error]>([])
    for index in 0..<count {
        ready.enter()
        finished.enter()
        let thread = Thread {
            ready.leave()
            go.wait()
            do {
                try body(index)
            } catch {
                failures.withLock { $0.append(error) }
            }
            finished.leave()
        }
        thread.start()
    }
    ready.wait()
    for _ in 0..<count { go.signal() }
    finished.wait()
    if let first = failures.withLock({ $0.first }) { throw first }
}

/// A value shared between threads behind a lock; a class, so escaping closures can capture it.
public final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    /// A box holding `value`.
    public init(_ value: Value) { mutex = Mutex(value) }

    /// Runs `body` with exclusive access to the value.
    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try mutex.withLock { value in try body(&value) }
    }

    /// A copy of the current value.
    public var value: Value { mutex.withLock { $0 } }
}
