import Foundation
import Glibc

/// Looks at this process's sockets through /proc, to check a server does not leak descriptors.
public enum HTTPSocketInspector {
    /// The number of this process's descriptors that are TCP sockets whose local port is `port`:
    /// the listening socket plus every accepted connection not yet closed. Client sockets of the
    /// same process (local port ephemeral) and other tests' sockets are not counted, so the number
    /// is meaningful while other tests run. Each socket descriptor is asked its own address
    /// (`getsockname`): /proc/net/tcp is not read atomically and, while thousands of connections
    /// come and go in other tests, a read can miss live entries.
    public static func serverSideSocketCount(port: Int) -> Int {
        let fdDirectory = "/proc/self/fd"
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: fdDirectory) else { return -1 }
        var count = 0
        for entry in entries {
            guard let descriptor = Int32(entry),
                let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(fdDirectory)/\(entry)"),
                target.hasPrefix("socket:[")
            else { continue }
            if localPort(of: descriptor) == port { count += 1 }
        }
        return count
    }

    /// The local TCP/UDP port of an IPv4 or IPv6 socket, nil for anything else.
    private static func localPort(of descriptor: Int32) -> Int? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard status == 0 else { return nil }
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &storage) { pointer in
                pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
            }
        case AF_INET6:
            return withUnsafePointer(to: &storage) { pointer in
                pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
            }
        default:
            return nil
        }
    }
}
