import Synchronization

/// Open connections per client address (`ClientAddress`), so one host cannot take every
/// connection the server allows (`maxConnectionsPerAddress`; 0 keeps no table at all).
final class AddressConnections: Sendable {
    private let limit: Int
    private let counts = Mutex<[String: Int]>([:])

    init(limit: Int) {
        self.limit = limit
    }

    /// Counts a new connection from `address`; false, with nothing counted, when the address
    /// already has `limit` open.
    func open(_ address: String) -> Bool {
        guard limit > 0 else { return true }
        return counts.withLock { counts in
            let open = counts[address, default: 0]
            guard open < limit else { return false }
            counts[address] = open + 1
            return true
        }
    }

    /// Forgets a closed connection from `address`.
    func close(_ address: String) {
        guard limit > 0 else { return }
        counts.withLock { counts in
            let remaining = counts[address, default: 0] - 1
            counts[address] = remaining > 0 ? remaining : nil
        }
    }
}
