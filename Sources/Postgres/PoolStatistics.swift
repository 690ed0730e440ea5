/// A snapshot of a pool's usage, for `/metrics` and `/health/ready`.
public struct PoolStatistics: Sendable, Hashable {
    /// Connections handed out to callers (or being opened for one).
    public var inUse: Int
    /// Open connections waiting in the pool.
    public var idle: Int
    /// Callers waiting for a connection.
    public var waiting: Int
    /// The most connections the pool opens.
    public var size: Int

    /// Creates a snapshot.
    public init(inUse: Int, idle: Int, waiting: Int, size: Int) {
        self.inUse = inUse
        self.idle = idle
        self.waiting = waiting
        self.size = size
    }
}
