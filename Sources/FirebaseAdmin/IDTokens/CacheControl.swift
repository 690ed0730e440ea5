import Primitives

/// Reads the directives of a `Cache-Control` header that the key cache cares about.
///
/// The header comes from the network, so every form must parse without a trap: empty
/// directives (`,,`), a lone `=`, empty names or values, quotes, huge numbers, any bytes.
public enum CacheControl {
    /// The `max-age` in seconds, or nil when absent or malformed. `no-cache`/`no-store` count as
    /// absent. Values over 12 digits are read as their first 12 digits (far beyond any cap).
    public static func maxAge(_ header: String?) -> Double? {
        guard let header else { return nil }
        var maxAge: Double?
        for directive in header.split(separator: ",", omittingEmptySubsequences: true) {
            let parts = directive.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            // `=` alone splits into two empty parts; a directive of spaces has an empty name.
            guard let first = parts.first else { continue }
            let name = first.trimmingSpaces().lowercased()
            if name == "no-cache" || name == "no-store" { return nil }
            guard name == "max-age", parts.count == 2 else { continue }
            var value = parts[1].trimmingSpaces()
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            guard !value.isEmpty, value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let seconds = Int(value.prefix(12))
            else { continue }
            maxAge = Double(seconds)
        }
        return maxAge
    }
}
