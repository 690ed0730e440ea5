import Foundation

/// Looks at this process's sockets through /proc, to check a server does not leak descriptors.
public enum HTTPSocketInspector {
    /// The number of this process's descriptors that are TCP sockets whose local port is `port`:
    /// the listening socket plus every accepted connection not yet closed. Client sockets of the
    /// same process (local port ephemeral) and other tests' sockets are not counted, so the number
    /// is meaningful while other tests run.
    public static func serverSideSocketCount(port: Int) -> Int {
        let inodes = socketInodes(localPort: port)
        let fdDirectory = "/proc/self/fd"
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: fdDirectory) else { return -1 }
        var count = 0
        for entry in entries {
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(fdDirectory)/\(entry)"),
                target.hasPrefix("socket:["), target.hasSuffix("]")
            else { continue }
            if inodes.contains(String(target.dropFirst(8).dropLast())) { count += 1 }
        }
        return count
    }

    /// The inodes of TCP sockets (IPv4 and IPv6) bound to local `port`, from /proc/net/tcp*.
    /// The tables are read three times and the results merged: a read is not atomic, and while
    /// thousands of connections come and go (other tests) a pass can skip live entries. Only
    /// sockets still open among this process's descriptors are counted by the caller.
    private static func socketInodes(localPort: Int) -> Set<String> {
        var inodes = Set<String>()
        let portSuffix = ":" + String(format: "%04X", localPort)
        for table in ["/proc/net/tcp", "/proc/net/tcp6", "/proc/net/tcp", "/proc/net/tcp6", "/proc/net/tcp", "/proc/net/tcp6"] {
            guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n").dropFirst() {
                let columns = line.split(separator: " ", omittingEmptySubsequences: true)
                guard columns.count > 9, columns[1].hasSuffix(portSuffix), columns[9] != "0" else { continue }
                inodes.insert(String(columns[9]))
            }
        }
        return inodes
    }
}
