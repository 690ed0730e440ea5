import Foundation
import JSON
import Locify
import LocifyRules
import Primitives

/// Builders of push changes and record bodies.
enum SyncChange {
    /// A fixed past instant plus `minutes`, in RFC 3339: client times that never hit the
    /// future clamp and order the writes deterministically.
    static func time(_ minutes: Int) -> String {
        Timestamp(milliseconds: 1_735_689_600_000 + Int64(minutes) * 60_000).rfc3339  // 2025-01-01T00:00Z
    }

    static func change(_ type: String, _ action: String, _ data: JSONObject) -> JSONValue {
        ["type": .string(type), "action": .string(action), "data": .object(data)]
    }

    static func category(_ id: UUID, name: String, at minutes: Int? = nil) -> JSONObject {
        var data: JSONObject = ["id": .string(id.uuidString), "name": .string(name)]
        if let minutes { data["updated_at"] = .string(time(minutes)) }
        return data
    }

    static func location(
        _ id: UUID, category: UUID, name: String, latitude: Double = 48.85, longitude: Double = 2.35, at minutes: Int? = nil
    ) -> JSONObject {
        var data: JSONObject = [
            "id": .string(id.uuidString), "category_id": .string(category.uuidString), "name": .string(name),
            "latitude": .number(latitude), "longitude": .number(longitude),
        ]
        if let minutes { data["updated_at"] = .string(time(minutes)) }
        return data
    }

    static func deletion(_ id: UUID, at minutes: Int? = nil, reassignTo target: UUID? = nil) -> JSONObject {
        var data: JSONObject = ["id": .string(id.uuidString)]
        if let minutes { data["updated_at"] = .string(time(minutes)) }
        if let target { data["reassign_category_id"] = .string(target.uuidString) }
        return data
    }
}
