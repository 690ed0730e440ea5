extension String {
    /// The string without leading and trailing whitespace in the sense of Foundation's
    /// `CharacterSet.whitespaces`: tab and the space separators (Unicode category Zs), but not
    /// line breaks. Here so that environment values and header fields trim without Foundation.
    public func trimmingWhitespaces() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.isHorizontalWhitespace }),
            let last = scalars.lastIndex(where: { !$0.isHorizontalWhitespace })
        else { return "" }
        return String(scalars[first...last])
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs (HTTP's optional whitespace,
    /// RFC 9110 section 5.6.3), for the header fields HTTP clients read.
    public func trimmingSpaces() -> String {
        var text = self[...]
        while let first = text.first, first == " " || first == "\t" { text = text.dropFirst() }
        while let last = text.last, last == " " || last == "\t" { text = text.dropLast() }
        return String(text)
    }
}

extension Unicode.Scalar {
    /// Tab or a space separator (category Zs): a member of Foundation's `CharacterSet.whitespaces`.
    fileprivate var isHorizontalWhitespace: Bool {
        self == "\t" || properties.generalCategory == .spaceSeparator
    }
}
