/// The rules of the location listing (`GET /v1/locations`, openapi.yaml) that both ends apply, so
/// that a device's offline queries select and order exactly what the server's listing does:
/// the `q` parameter, the text it searches, and the name order.
///
/// The server stores `TextRules.sortKey(name)` as `name_key` (COLLATE "C") and ``searchText(name:address:description:)``
/// as `search_text`, both computed here in Swift, not in SQL; it matches `q` with
/// `search_text LIKE '%' || escaped(sortKey(q)) || '%'` (the user's `%`, `_` and `\` escaped): a
/// literal substring test on code points, which ``matches(searchText:term:)`` is. `COLLATE "C"`
/// on a UTF-8 database orders by bytes, which ``nameKeyPrecedes(_:_:)`` does.
public enum ListingRules {
    /// Longest `q`, in code points.
    public static let maxSearchLength = 255

    /// The `q` of a listing, checked: no control character (general category Cc), at most
    /// ``maxSearchLength`` code points; empty means no filter (nil). Not trimmed: a space searches
    /// for a space.
    public static func searchTerm(_ raw: String?, field: String = "q") throws(RuleViolation) -> String? {
        guard let raw, !raw.isEmpty else { return nil }
        if raw.unicodeScalars.contains(where: ControlCharacter.isControl) {
            throw .invalidInput(field: field, reason: "must not contain control characters")
        }
        if raw.unicodeScalars.count > maxSearchLength {
            throw .invalidInput(field: field, reason: "must be at most \(maxSearchLength) characters")
        }
        return raw
    }

    /// What `q` is searched in: the lower-cased name, address and description, one per line (a
    /// search term holds no line break, so it never matches across fields).
    public static func searchText(name: String, address: String?, description: String?) -> String {
        [name, address ?? "", description ?? ""].map(TextRules.sortKey).joined(separator: "\n")
    }

    /// The form of a search term matched against ``searchText(name:address:description:)``.
    public static func searchKey(_ term: String) -> String { TextRules.sortKey(term) }

    /// Whether `searchText` contains `term` (case-insensitively, as ``searchKey(_:)`` folds it):
    /// a substring of code points, compared on UTF-8 bytes as the server's escaped `LIKE` does;
    /// no Unicode equivalence (`é` and `e` + U+0301 differ) and `%`, `_`, `\` are plain characters.
    public static func matches(searchText: String, term: String) -> Bool {
        containsBytes(searchText.utf8, searchKey(term).utf8)
    }

    /// Whether name key `a` sorts before `b`: the byte order of their UTF-8, which is the server's
    /// `name_key COLLATE "C"` (and code point order). Equal keys are ordered by id by the caller.
    public static func nameKeyPrecedes(_ a: String, _ b: String) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8)
    }

    private static func containsBytes(_ text: String.UTF8View, _ needle: String.UTF8View) -> Bool {
        if needle.isEmpty { return true }
        let haystack = Array(text), pattern = Array(needle)
        guard pattern.count <= haystack.count else { return false }
        for start in 0...(haystack.count - pattern.count) where haystack[start] == pattern[0] {
            if haystack[start..<(start + pattern.count)].elementsEqual(pattern) { return true }
        }
        return false
    }
}
