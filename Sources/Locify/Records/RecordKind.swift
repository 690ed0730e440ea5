/// The two kinds of user records, in the order the sync feed delivers them within a response.
public enum RecordKind: UInt8, Sendable, Comparable, CaseIterable {
    case category = 0
    case location = 1

    /// The API's name for the kind (`"category"` / `"location"`).
    public var name: String {
        switch self {
        case .category: return "category"
        case .location: return "location"
        }
    }

    /// The kind named by a sync change's `type` (`category` or `location`); nil for any other name.
    public init?(name: String) {
        switch name {
        case "category": self = .category
        case "location": self = .location
        default: return nil
        }
    }

    /// Categories order before locations, the order of the change feed.
    public static func < (lhs: RecordKind, rhs: RecordKind) -> Bool { lhs.rawValue < rhs.rawValue }
}
