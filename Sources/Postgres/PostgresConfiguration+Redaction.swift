/// Connection strings for logs and errors: every spelling of a password libpq accepts is hidden
/// (issue 23; the table of spellings in `ConnectionStringRedactionTests` is checked against
/// libpq's own `PQconninfoParse`). Where libpq's reading and a human's may differ, the wider one
/// is hidden.
extension PostgresConfiguration {
    /// The keywords whose values are secrets: the password and the client key's passphrase.
    static let secretKeywords: Set<String> = ["password", "sslpassword"]

    /// `connectionString` with its secrets replaced by `***`, for logs and errors.
    ///
    /// A `postgres://` / `postgresql://` URI (any letter case) loses everything from the first
    /// `:` of the userinfo to the last `@` of the string, so a raw `/`, `?` or `@` in a password is
    /// hidden however libpq splits it, and the value of every query parameter whose keyword
    /// percent-decodes to `password` or `sslpassword`. A `key=value` string is read as libpq
    /// reads it (values quoted with `'` or not, `\` escapes in both, no space needed after a
    /// quoted value): each secret keyword's value becomes `***`, and from the first point libpq
    /// would refuse (a token without `=`, an unterminated quote) the rest is `***` too.
    public static func redacted(_ connectionString: String) -> String {
        redaction(of: connectionString).shown
    }

    /// The redacted string and the pieces of `connectionString` it hides.
    static func redaction(of connectionString: String) -> (shown: String, hidden: [String]) {
        let lowered = connectionString.lowercased()
        guard let scheme = ["postgresql://", "postgres://"].first(where: { lowered.hasPrefix($0) }) else {
            return redactedKeywordValue(connectionString)
        }
        let text = Substring(connectionString)
        let rest = text.dropFirst(scheme.count)
        var shown = String(text.prefix(scheme.count))
        var hidden: [String] = []
        if let at = rest.lastIndex(of: "@"), let colon = rest[..<at].firstIndex(of: ":") {
            shown += rest[..<colon] + ":***" + rest[at...]
            hidden.append(String(rest[rest.index(after: colon)..<at]))
        } else {
            shown += rest
        }
        guard let mark = shown.firstIndex(of: "?") else { return (shown, hidden) }
        let pairs = shown[shown.index(after: mark)...].split(separator: "&", omittingEmptySubsequences: false).map { pair in
            let keyword = pair.prefix { $0 != "=" }
            guard pair.contains("="), secretKeywords.contains(percentDecodedLowercased(keyword)) else { return String(pair) }
            hidden.append(String(pair.dropFirst(keyword.count + 1)))
            return keyword + "=***"
        }
        return (shown[...mark] + pairs.joined(separator: "&"), hidden)
    }

    /// Whether a URI holds a raw `@` after libpq's userinfo and before its query, that is in the
    /// host or the database name: the sign of a password with an unencoded `/` (libpq ends its
    /// userinfo search at the first `/`) or `@` (it ends the userinfo at the first `@`).
    static func uriHoldsStrayAt(_ connectionString: String) -> Bool {
        let lowered = connectionString.lowercased()
        guard let scheme = ["postgresql://", "postgres://"].first(where: { lowered.hasPrefix($0) }) else { return false }
        var rest = Substring(connectionString).dropFirst(scheme.count)
        if let end = rest.firstIndex(where: { $0 == "@" || $0 == "/" }), rest[end] == "@" {
            rest = rest[rest.index(after: end)...]
        }
        return rest.prefix { $0 != "?" }.contains("@")
    }

    /// A URI query keyword as libpq compares it (percent-decoded), lower-cased; undecodable
    /// escapes stay as they are.
    private static func percentDecodedLowercased(_ keyword: Substring) -> String {
        var bytes: [UInt8] = []
        var iterator = keyword.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next(), let low = iterator.next(), let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
            else { break }
            bytes.append(value)
        }
        return String(decoding: bytes, as: UTF8.self).lowercased()
    }

    /// The `key=value` form, tokenized as libpq's `conninfo_parse` does (on bytes, with C's
    /// `isspace`, since a non-ASCII space is part of a value there).
    private static func redactedKeywordValue(_ text: String) -> (shown: String, hidden: [String]) {
        let bytes = Array(text.utf8)
        let stars = Array("***".utf8)
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || (0x09...0x0D).contains(byte) }
        var result: [UInt8] = []
        var hidden: [String] = []
        var index = 0
        while index < bytes.count {
            if isSpace(bytes[index]) {
                result.append(bytes[index])
                index += 1
                continue
            }
            let keywordStart = index
            while index < bytes.count, bytes[index] != UInt8(ascii: "="), !isSpace(bytes[index]) { index += 1 }
            let keyword = String(decoding: bytes[keywordStart..<index], as: UTF8.self)
            while index < bytes.count, isSpace(bytes[index]) { index += 1 }
            guard index < bytes.count, bytes[index] == UInt8(ascii: "=") else {
                // libpq refuses the string here; what follows is not shown.
                result += stars
                hidden.append(String(decoding: bytes[keywordStart...], as: UTF8.self))
                break
            }
            index += 1
            while index < bytes.count, isSpace(bytes[index]) { index += 1 }
            let valueStart = index
            var terminated = true
            if index < bytes.count, bytes[index] == UInt8(ascii: "'") {
                index += 1
                terminated = false
                while index < bytes.count {
                    if bytes[index] == UInt8(ascii: "\\") {
                        index += 2
                    } else if bytes[index] == UInt8(ascii: "'") {
                        index += 1
                        terminated = true
                        break
                    } else {
                        index += 1
                    }
                }
            } else {
                while index < bytes.count, !isSpace(bytes[index]) {
                    index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
                }
            }
            index = min(index, bytes.count)
            result += Array(keyword.utf8) + [UInt8(ascii: "=")]
            if terminated && !secretKeywords.contains(keyword) {
                result += bytes[valueStart..<index]
            } else {
                result += stars
                hidden.append(String(decoding: bytes[valueStart..<index], as: UTF8.self))
            }
        }
        return (String(decoding: result, as: UTF8.self), hidden)
    }

    /// libpq's reason for refusing `connectionString`, fit to be shown beside `redaction.shown`:
    /// every piece the redaction hides is replaced by `***`, and so is every quoted token (libpq
    /// quotes the token it could not parse, e.g. a password with a `%`) that does not occur in
    /// the shown string. A reason with an odd number of quotes (a `"` inside a quoted secret) is
    /// cut at its first quote.
    static func redactedReason(_ reason: String, redaction: (shown: String, hidden: [String])) -> String {
        var reason = reason
        for piece in redaction.hidden where !piece.isEmpty {
            reason = reason.replacing(piece, with: "***")
        }
        let parts = reason.split(separator: "\"", omittingEmptySubsequences: false)
        guard parts.count % 2 == 1 else { return parts[0] + "\"***\"" }
        return parts.enumerated().map { index, part in
            index % 2 == 1 && !redaction.shown.contains(part) ? "***" : String(part)
        }.joined(separator: "\"")
    }
}
