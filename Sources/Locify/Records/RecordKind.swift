/// The two kinds of user records, in the order the sync feed delivers them within a response.
/// Their names on the wire (a push change's `type`, the noun of an E007) are `LocifyAPI`'s.
public enum RecordKind: UInt8, Sendable, Comparable, CaseIterable {
    case category = 0
    case location = 1

    /// Categories order before locations, the order of the change feed.
    public static func < (lhs: RecordKind, rhs: RecordKind) -> Bool { lhs.rawValue < rhs.rawValue }
}
