/// Header fields as an ordered list of (name, value) pairs. Duplicates are kept in arrival order;
/// lookups compare names case-insensitively (RFC 9110 5.1). Names keep the case they were given.
public struct HTTPHeaders: Sendable, RandomAccessCollection, Equatable, ExpressibleByDictionaryLiteral,
    CustomStringConvertible
{
    /// One field: its name as received (case kept) and its value.
    public typealias Element = (name: String, value: String)

    @usableFromInline var fields: [Element]

    /// An empty list.
    public init() {
        fields = []
    }

    /// A list holding `fields` in the given order.
    public init(_ fields: [(name: String, value: String)]) {
        self.fields = fields
    }

    /// A list from a literal; repeated names are kept as separate fields.
    public init(dictionaryLiteral elements: (String, String)...) {
        fields = elements.map { (name: $0.0, value: $0.1) }
    }

    /// The position of the first field.
    public var startIndex: Int { fields.startIndex }
    /// The position past the last field.
    public var endIndex: Int { fields.endIndex }

    /// The field at `position`, in arrival order.
    public subscript(position: Int) -> Element { fields[position] }

    /// The value of the first field named `name` (case-insensitive), or nil.
    public subscript(name: String) -> String? {
        for field in fields where HTTPText.equalsIgnoringASCIICase(field.name, name) {
            return field.value
        }
        return nil
    }

    /// The values of every field named `name` (case-insensitive), in order.
    public func values(for name: String) -> [String] {
        fields.compactMap { HTTPText.equalsIgnoringASCIICase($0.name, name) ? $0.value : nil }
    }

    /// True when at least one field is named `name` (case-insensitive).
    public func contains(_ name: String) -> Bool {
        fields.contains { HTTPText.equalsIgnoringASCIICase($0.name, name) }
    }

    /// Appends a field, keeping any existing fields of the same name.
    public mutating func add(_ name: String, _ value: String) {
        fields.append((name: name, value: value))
    }

    /// Replaces every field named `name` by a single field with `value`, placed where the first was.
    public mutating func set(_ name: String, _ value: String) {
        if let first = fields.firstIndex(where: { HTTPText.equalsIgnoringASCIICase($0.name, name) }) {
            fields[first] = (name: name, value: value)
            var index = fields.index(after: first)
            while index < fields.endIndex {
                if HTTPText.equalsIgnoringASCIICase(fields[index].name, name) {
                    fields.remove(at: index)
                } else {
                    index += 1
                }
            }
        } else {
            fields.append((name: name, value: value))
        }
    }

    /// Removes every field named `name` (case-insensitive).
    public mutating func remove(_ name: String) {
        fields.removeAll { HTTPText.equalsIgnoringASCIICase($0.name, name) }
    }

    /// True when the comma-separated values of `name` contain `token` (case-insensitive), e.g.
    /// `Connection: keep-alive, Upgrade` contains `upgrade`.
    public func containsToken(_ token: String, in name: String) -> Bool {
        for field in fields where HTTPText.equalsIgnoringASCIICase(field.name, name) {
            for element in field.value.split(separator: ",") {
                if HTTPText.equalsIgnoringASCIICase(HTTPText.trimmingOptionalWhitespace(element), token) {
                    return true
                }
            }
        }
        return false
    }

    /// Equal when the same fields come in the same order, names spelt alike (case included).
    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields.count == rhs.fields.count
            && zip(lhs.fields, rhs.fields).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }

    /// The fields as `name: value` lines, for logs and test failures.
    public var description: String {
        fields.map { "\($0.name): \($0.value)" }.joined(separator: "\n")
    }
}
