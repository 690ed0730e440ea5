import Foundation

/// Starts the server's own threads (never Dispatch's pool), named for `top -H` and debuggers.
enum DedicatedThread {
    /// Runs `body` on a new thread called `name` (at most 15 characters are kept by Linux).
    static func start(name: String, stackSize: Int = 1 << 20, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread {
            // Set from inside: Foundation on Linux applies the name to the running thread only.
            Thread.current.name = name
            body()
        }
        thread.stackSize = stackSize
        thread.start()
    }
}
