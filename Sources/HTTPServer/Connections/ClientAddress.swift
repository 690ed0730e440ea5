import Glibc

/// Whom a connection counts against in per-client limits (connections per address, the share
/// of the body budget, the API's per-address bucket): the peer's IPv4 address, or the /64 prefix
/// of an IPv6 one (a single host usually holds a whole /64, so per-address keys would be free to
/// make).
public enum ClientAddress {
    /// The key for a peer written `address:port` or `[v6 address]:port` (`ConnectionInfo`).
    public static func key(_ remoteAddress: String) -> String {
        if remoteAddress.hasPrefix("["), let close = remoteAddress.firstIndex(of: "]") {
            let address = String(remoteAddress[remoteAddress.index(after: remoteAddress.startIndex)..<close])
            var bytes = in6_addr()
            guard inet_pton(AF_INET6, address, &bytes) == 1 else { return address }
            let prefix = withUnsafeBytes(of: bytes) { Array($0.prefix(8)) }
            if prefix == [0, 0, 0, 0, 0, 0, 0, 0] { return address }  // IPv4-mapped, loopback: whole
            return stride(from: 0, to: 8, by: 2).map { String(UInt16(prefix[$0]) << 8 | UInt16(prefix[$0 + 1]), radix: 16) }
                .joined(separator: ":") + "::/64"
        }
        guard let colon = remoteAddress.lastIndex(of: ":") else { return remoteAddress }
        return String(remoteAddress[..<colon])
    }
}
