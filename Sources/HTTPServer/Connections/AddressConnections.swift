import Synchronization

/// Open connections per client address (`ClientAddress`), so one host cannot take every
/// connection the server allows (`maxConnectionsPerAddress`; 0 refuses none), and so that at
/// `maxConnections` room is made at the expense of the addresses holding the most.
final class AddressConnections: Sendable {
    private let limit: Int
    private let counts = Mutex<[String: Int]>([:])

    init(limit: Int) {
        self.limit = limit
    }

    /// Counts a new connection from `address`; false, with nothing counted, when the address
    /// already has `limit` open.
    func open(_ address: String) -> Bool {
        counts.withLock { counts in
            let open = counts[address, default: 0]
            guard limit == 0 || open < limit else { return false }
            counts[address] = open + 1
            return true
        }
    }

    /// Forgets a closed connection from `address`.
    func close(_ address: String) {
        counts.withLock { counts in
            let remaining = counts[address, default: 0] - 1
            counts[address] = remaining > 0 ? remaining : nil
        }
    }

    /// The addresses holding the most open connections (empty when none is open).
    func mostConnected() -> Set<String> {
        counts.withLock { counts in
            guard let most = counts.values.max() else { return [] }
            return Set(counts.compactMap { $0.value == most ? $0.key : nil })
        }
    }
}
