/// Per-connection map from SQL text (plus parameter types) to the name of its server-side
/// prepared statement, bounded by evicting the least recently used entry.
struct PreparedStatementCache {
    /// Identifies a statement: the same SQL bound with different parameter types is prepared twice.
    struct Key: Hashable {
        var sql: String
        var parameterTypes: [UInt32]
    }

    private struct Entry {
        var name: String
        var lastUse: UInt64
    }

    /// At most this many statements stay prepared on one connection.
    let capacity: Int
    private var entries: [Key: Entry] = [:]
    private var useCounter: UInt64 = 0
    private var nameCounter = 0

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    var count: Int { entries.count }

    /// The statement name for `key`, marking it as recently used.
    mutating func name(for key: Key) -> String? {
        guard var entry = entries[key] else { return nil }
        useCounter &+= 1
        entry.lastUse = useCounter
        entries[key] = entry
        return entry.name
    }

    /// A fresh statement name, never handed out before on this connection.
    mutating func makeName() -> String {
        nameCounter += 1
        return "s\(nameCounter)"
    }

    /// Records a prepared statement; returns the name of the entry evicted to make room, if any,
    /// which the caller deallocates on the server.
    mutating func insert(_ name: String, for key: Key) -> String? {
        var evicted: String?
        if entries[key] == nil, entries.count >= capacity,
            let oldest = entries.min(by: { $0.value.lastUse < $1.value.lastUse })
        {
            entries[oldest.key] = nil
            evicted = oldest.value.name
        }
        useCounter &+= 1
        entries[key] = Entry(name: name, lastUse: useCounter)
        return evicted
    }

    /// Forgets `key` (its statement vanished on the server or must be re-prepared).
    mutating func remove(_ key: Key) {
        entries[key] = nil
    }
}
