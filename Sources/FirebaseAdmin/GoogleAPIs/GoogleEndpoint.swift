import FoundationEssentials

/// Where the server may send Google credentials and tokens (signed assertions, access tokens,
/// ID-token keys): an `https://` URL with a host, or plain `http://` only to a loopback host
/// (local fakes and emulators), so a mistaken configuration cannot send them in the clear.
public enum GoogleEndpoint {
    /// Whether `text` is such a URL.
    public static func isAcceptable(_ text: String) -> Bool {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty
        else { return false }
        return scheme == "https" || (scheme == "http" && isLoopback(host: host))
    }

    /// `localhost`, `127.0.0.0/8` or `::1` (with or without brackets).
    public static func isLoopback(host: String) -> Bool {
        var name = host.lowercased()
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        if name == "localhost" || name == "::1" || name == "0:0:0:0:0:0:0:1" { return true }
        let octets = name.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4, octets[0] == "127" else { return false }
        return octets.allSatisfy { octet in
            !octet.isEmpty && octet.count <= 3 && octet.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
                && (Int(octet) ?? 256) <= 255
        }
    }
}
