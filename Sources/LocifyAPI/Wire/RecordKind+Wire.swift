import Locify
import LocifyRules

/// The API's names of the record kinds: a push change's `type` (read and echoed), a feed
/// change's `type`, and the noun of an E007 ("category not found").
extension RecordKind {
    /// `"category"` or `"location"`.
    var wireName: String {
        switch self {
        case .category: return "category"
        case .location: return "location"
        }
    }

    /// The kind a change's `type` names (`category` or `location`); nil for any other text.
    init?(wireName: String) {
        guard let kind = Self.allCases.first(where: { $0.wireName == wireName }) else { return nil }
        self = kind
    }
}
