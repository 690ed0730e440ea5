/// The members of a JSON object, in document order, with unique keys.
///
/// Small objects are searched linearly; larger ones keep a key index, so lookups stay cheap
/// for request bodies with many members. Equality ignores member order (keys are unique).
/// Keys are compared by their Unicode code points, as JSON compares member names (RFC 8259
/// section 8.3), not by Swift's canonical equivalence (under which U+2001 equals U+2003).
public struct JSONObject: Sendable, Equatable, Sequence {
    /// One member of an object.
    public typealias Member = (key: String, value: JSONValue)

    /// Objects with more members than this keep a dictionary index of their keys.
    static let indexThreshold = 8

    private var members: [Member]
    private var index: [JSONKey: Int]?

    /// An empty object.
    public init() {
        members = []
        index = nil
    }

    /// An object from members whose keys the caller guarantees to be unique (the parser).
    init(uniqueMembers: [Member]) {
        self.members = uniqueMembers
        self.index = nil
        rebuildIndex()
    }

    /// An object from members in order; a repeated key keeps its first position and last value.
    public init(_ members: [(String, JSONValue)]) {
        self.init()
        for (key, value) in members { self[key] = value }
    }

    /// The number of members.
    public var count: Int { members.count }

    /// Whether the object has no members.
    public var isEmpty: Bool { members.isEmpty }

    /// The keys in document order.
    public var keys: [String] { members.map(\.key) }

    /// The value of `key`, or nil when absent. Setting nil removes the member; setting a new
    /// key appends it.
    public subscript(key: String) -> JSONValue? {
        get {
            guard let position = position(of: key) else { return nil }
            return members[position].value
        }
        set {
            if let position = position(of: key) {
                if let newValue {
                    members[position].value = newValue
                } else {
                    members.remove(at: position)
                    rebuildIndex()
                }
            } else if let newValue {
                members.append((key: key, value: newValue))
                if index != nil {
                    index?[JSONKey(key)] = members.count - 1
                } else if members.count > Self.indexThreshold {
                    rebuildIndex()
                }
            }
        }
    }

    /// Whether a member named `key` exists (even when its value is `null`).
    public func contains(key: String) -> Bool { position(of: key) != nil }

    /// Iterates the members in document order.
    public func makeIterator() -> IndexingIterator<[Member]> { members.makeIterator() }

    /// Equal when the same members come in the same order.
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        guard lhs.count == rhs.count else { return false }
        for member in lhs.members {
            guard let other = rhs[member.key], other == member.value else { return false }
        }
        return true
    }

    private func position(of key: String) -> Int? {
        if let index { return index[JSONKey(key)] }
        return members.firstIndex { JSONKey.same($0.key, key) }
    }

    private mutating func rebuildIndex() {
        guard members.count > Self.indexThreshold else {
            index = nil
            return
        }
        var built = [JSONKey: Int](minimumCapacity: members.count)
        for (position, member) in members.enumerated() { built[JSONKey(member.key)] = position }
        index = built
    }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    /// An object of the literal's members, in the literal's order.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init(elements)
    }
}

/// A member name that compares and hashes by its UTF-8 bytes, that is by code points.
struct JSONKey: Hashable, Sendable {
    let name: String

    init(_ name: String) {
        self.name = name
    }

    /// Whether two names are the same sequence of code points.
    static func same(_ lhs: String, _ rhs: String) -> Bool {
        lhs.utf8.elementsEqual(rhs.utf8)
    }

    static func == (lhs: JSONKey, rhs: JSONKey) -> Bool {
        same(lhs.name, rhs.name)
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(name.utf8.count)
        for byte in name.utf8 { hasher.combine(byte) }
    }
}
