import Dispatch
import Foundation

/// A job on a dedicated background thread (never the Swift concurrency pool), joined with `wait`.
public final class HTTPBackgroundJob: Sendable {
    private let done = DispatchSemaphore(value: 0)

    /// Starts `body` on its own thread.
    public init(_ body: @escaping @Sendable () -> Void) {
        let done = self.done
        let thread = Thread {
            body()
            done.signal()
        }
        thread.start()
    }

    /// Waits for the job; false if it did not finish within `timeout`.
    @discardableResult
    public func wait(timeout: Duration = .seconds(30)) -> Bool {
        done.wait(timeout: .now() + .milliseconds(timeout.milliseconds)) == .success
    }
}
