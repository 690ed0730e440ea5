#if canImport(Glibc)
import Glibc
#endif

/// An `http` or `https` URL split into what one request needs: the scheme, the host to connect
/// to, the port and the request target. Anything else (other schemes, user info, spaces, bad
/// ports) is refused with `TransportError`, before any connection is made.
struct TransportURL: Sendable, Equatable {
    /// Whether the connection is TLS.
    var isHTTPS: Bool
    /// The host name or IP address, without the brackets of an IPv6 literal.
    var host: String
    /// The TCP port (80 or 443 when the URL names none).
    var port: UInt16
    /// The path and query (`/` when the URL has no path); the fragment is dropped.
    var target: String

    /// Whether `host` is an IPv4 or IPv6 literal rather than a DNS name.
    var hostIsIPAddress: Bool { Self.isIPv4(host) || Self.isIPv6(host) }

    /// The `Host` header value: the host (bracketed when IPv6) and the port when not the default.
    var hostHeader: String {
        let name = Self.isIPv6(host) ? "[\(host)]" : host
        return port == (isHTTPS ? 443 : 80) ? name : "\(name):\(port)"
    }

    /// Parses `text`, an absolute, already percent-encoded URL.
    init(_ text: String) throws(TransportError) {
        let bytes = Array(text.utf8)
        guard !bytes.contains(where: { $0 <= 0x20 || $0 >= 0x7F }) else {
            throw TransportError("invalid URL: spaces, control or non-ASCII characters")
        }
        let lowered = text.lowercased()
        let rest: Substring
        if lowered.hasPrefix("https://") {
            isHTTPS = true
            rest = text.dropFirst("https://".count)
        } else if lowered.hasPrefix("http://") {
            isHTTPS = false
            rest = text.dropFirst("http://".count)
        } else {
            throw TransportError("invalid URL: only http and https are supported")
        }
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var target = rest[authorityEnd...]
        if let fragment = target.firstIndex(of: "#") { target = target[..<fragment] }
        guard !authority.contains("@") else { throw TransportError("invalid URL: user information is not supported") }

        let hostPart: Substring
        let portPart: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw TransportError("invalid URL: unclosed IPv6 literal") }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            guard Self.isIPv6(String(hostPart)), after.isEmpty || after.hasPrefix(":") else {
                throw TransportError("invalid URL: bad IPv6 literal")
            }
            portPart = after.isEmpty ? nil : after.dropFirst()
        } else {
            let pieces = authority.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            hostPart = pieces[0]
            portPart = pieces.count > 1 ? pieces[1] : nil
            let allowed = hostPart.utf8.allSatisfy { byte in
                (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2D
                    || byte == 0x2E || byte == 0x5F
            }
            guard !hostPart.isEmpty, allowed else { throw TransportError("invalid URL: bad host") }
        }
        host = String(hostPart)
        if let portPart, !portPart.isEmpty {
            guard portPart.count <= 5, portPart.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let number = Int(portPart), number >= 1,
                number <= 65535
            else { throw TransportError("invalid URL: bad port") }
            port = UInt16(number)
        } else {
            port = isHTTPS ? 443 : 80
        }
        if target.isEmpty {
            self.target = "/"
        } else if target.hasPrefix("?") {
            self.target = "/" + target
        } else {
            self.target = String(target)
        }
    }

    private static func isIPv4(_ text: String) -> Bool {
        var address = in_addr()
        return inet_pton(AF_INET, text, &address) == 1
    }

    private static func isIPv6(_ text: String) -> Bool {
        var address = in6_addr()
        return inet_pton(AF_INET6, text, &address) == 1
    }
}
