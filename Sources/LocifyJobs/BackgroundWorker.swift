/// A piece of background work the application runs beside the HTTP server, as one list
/// (`Application`): started with the server, and at shutdown first all told to drain (take no
/// new unit of work), then each stopped (waited for), so the workers finish their current units
/// side by side rather than one after the other.
public protocol BackgroundWorker: Sendable {
    /// Starts the worker on a thread of its own.
    func start()
    /// Takes no new unit of work from now on; returns at once.
    func drain()
    /// Drains and returns once the unit of work in progress, if any, has ended.
    func stop()
}

extension CleanupWorker: BackgroundWorker {}
extension TombstonePurger: BackgroundWorker {}
extension CascadeWorker: BackgroundWorker {}
