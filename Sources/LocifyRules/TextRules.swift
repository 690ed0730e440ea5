/// The text rules of openapi.yaml: trimming, lengths in Unicode code points, control
/// characters, and https URLs. Each refuses with E001 naming the field (`RuleViolation`).
public enum TextRules {
    /// Longest name, in code points, after trimming.
    public static let maxNameLength = 255
    /// Longest address or description, in code points.
    public static let maxLongTextLength = 1000
    /// Longest URL, in code points.
    public static let maxURLLength = 2048

    /// Trims leading and trailing Unicode whitespace, then requires 1-255 code points and no
    /// control character (general category Cc: C0, DEL, C1).
    public static func name(_ raw: String, field: String) throws(RuleViolation) -> String {
        let trimmed = trimmingWhitespace(raw)
        if trimmed.isEmpty { throw .invalidInput(field: field, reason: "must not be empty") }
        if trimmed.unicodeScalars.count > maxNameLength {
            throw .invalidInput(field: field, reason: "must be at most \(maxNameLength) characters")
        }
        if trimmed.unicodeScalars.contains(where: ControlCharacter.isControl) {
            throw .invalidInput(field: field, reason: "must not contain control characters")
        }
        return trimmed
    }

    /// An address or description: at most 1000 code points, control characters other than tab,
    /// line feed and carriage return refused; empty or all-whitespace becomes nil.
    public static func longText(_ raw: String, field: String) throws(RuleViolation) -> String? {
        if raw.unicodeScalars.count > maxLongTextLength {
            throw .invalidInput(field: field, reason: "must be at most \(maxLongTextLength) characters")
        }
        if raw.unicodeScalars.contains(where: { ControlCharacter.isControl($0) && !isAllowedLayoutControl($0) }) {
            throw .invalidInput(field: field, reason: "must not contain control characters other than tab and line breaks")
        }
        return raw.unicodeScalars.allSatisfy(\.properties.isWhitespace) ? nil : raw
    }

    /// An absolute URL with scheme `https` (any letter case) and a host, no whitespace or control
    /// characters, at most 2048 code points. Returned unchanged.
    public static func httpsURL(_ raw: String, field: String) throws(RuleViolation) -> String {
        if raw.unicodeScalars.count > maxURLLength {
            throw .invalidInput(field: field, reason: "must be at most \(maxURLLength) characters")
        }
        guard isHTTPSURL(raw) else {
            throw .invalidInput(field: field, reason: "must be an absolute https URL")
        }
        try storageObjectURL(raw, field: field)
        return raw
    }

    /// A URL recognised as a Cloud Storage object (openapi.yaml, `HttpsUrl`: Firebase download URL
    /// or `https://storage.googleapis.com/<bucket>/<path>`) must name an object that can exist:
    /// its percent-decoded name 1-1,024 bytes of UTF-8 without control characters. Such a value
    /// could never be cleaned up (a NUL cannot even be queued), so it is refused at write time.
    private static func storageObjectURL(_ raw: String, field: String) throws(RuleViolation) {
        guard let reference = StorageObjectReference.parse(raw),
            let problem = StorageObjectReference.objectNameProblem(reference.path)
        else { return }
        switch problem {
        case .tooLong:
            throw .invalidInput(
                field: field,
                reason: "names a Cloud Storage object longer than \(StorageObjectReference.maximumObjectNameBytes) bytes once percent-decoded")
        case .controlCharacter, .empty:
            throw .invalidInput(field: field, reason: "names a Cloud Storage object with a control character once percent-decoded")
        }
    }

    static func isHTTPSURL(_ raw: String) -> Bool {
        let bytes = Array(raw.utf8)
        if bytes.allSatisfy({ $0 < 0x80 }) {
            // The same rule on ASCII, without the scalar walk: the ASCII whitespace and
            // `ControlCharacter`s are the bytes up to 0x20, and DEL.
            if bytes.contains(where: { $0 <= 0x20 || $0 == 0x7F }) { return false }
        } else if raw.unicodeScalars.contains(where: { $0.properties.isWhitespace || ControlCharacter.isControl($0) }) {
            return false
        }
        // The delimiters below are ASCII, and UTF-8 never uses ASCII bytes inside a multi-byte
        // character, so the structure can be read on bytes.
        guard bytes.count > 8,
            zip(bytes[0..<8], "https://".utf8).allSatisfy({ ($0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0) == $1 })
        else { return false }
        let rest = bytes[8...]
        let authorityEnd = rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
        let authority = rest[..<(authorityEnd ?? rest.endIndex)]
        let hostAndPort = authority.lastIndex(of: UInt8(ascii: "@")).map { authority[($0 + 1)...] } ?? authority
        if hostAndPort.first == UInt8(ascii: "[") {
            guard let close = hostAndPort.firstIndex(of: UInt8(ascii: "]")) else { return false }
            return close - hostAndPort.startIndex > 1 && isValidPortSuffix(hostAndPort[(close + 1)...])
        }
        guard let colon = hostAndPort.firstIndex(of: UInt8(ascii: ":")) else { return !hostAndPort.isEmpty }
        return colon > hostAndPort.startIndex && isValidPortSuffix(hostAndPort[colon...])
    }

    /// Empty, or `:` followed by 1-5 digits.
    private static func isValidPortSuffix(_ suffix: ArraySlice<UInt8>) -> Bool {
        guard let first = suffix.first else { return true }
        let digits = suffix.dropFirst()
        return first == UInt8(ascii: ":") && (1...5).contains(digits.count)
            && digits.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    private static func trimmingWhitespace(_ raw: String) -> String {
        let scalars = raw.unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(scalars[first...last])
    }

    private static func isAllowedLayoutControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar == "\t" || scalar == "\n" || scalar == "\r"
    }

    /// The case-folded sort and search key of a name (Unicode-aware, locale-independent).
    public static func sortKey(_ text: String) -> String { text.lowercased() }
}
