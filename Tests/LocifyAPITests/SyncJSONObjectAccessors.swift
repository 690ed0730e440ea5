import JSON

extension JSONObject {
    /// `type:id` of a feed change or push result.
    var changeKey: String { "\(self["type"]?.stringValue ?? "?"):\(self["id"]?.stringValue ?? "?")" }

    /// The member as a string ("" when absent or not a string).
    func string(_ key: String) -> String { self[key]?.stringValue ?? "" }

    /// The member as an integer (-1 when absent or not an integer).
    func int(_ key: String) -> Int64 { self[key]?.int64Value ?? -1 }

    /// `data` as an object (empty when absent or not an object).
    var dataObject: JSONObject { self["data"]?.objectValue ?? JSONObject() }

    /// `error.code` of a push result.
    var resultErrorCode: String? { self["error"]?.objectValue?["code"]?.stringValue }

    /// The record without `location_count`, which the feed does not refresh when only a
    /// location changes (clients count locations themselves, openapi.yaml).
    var withoutLocationCount: JSONObject {
        var copy = self
        copy["location_count"] = nil
        return copy
    }
}
