import Foundation
import LocifyClient
import TestSupport

/// What one user did, as plain dictionaries: the oracle of the model-based history test. Every
/// action applies to the model exactly as the product promises (a category delete takes its places
/// with it, or moves them to the target), with no clock, no network and no server.
struct UserModel: Sendable, Equatable {
    struct CategoryValue: Sendable, Hashable {
        var name: String
        var icon: String?
    }

    struct LocationValue: Sendable, Hashable {
        var categoryID: UUID
        var name: String
        var address: String?
        var description: String?
        var latitude: Double
        var longitude: Double
        var isFavorite: Bool
        var imageURLs: [String]
    }

    var categories: [UUID: CategoryValue] = [:]
    var locations: [UUID: LocationValue] = [:]

    /// The model of records as a device or the server holds them (content only: times, versions
    /// and counts are the engine's business).
    init(categories: [Category], locations: [Location]) {
        for category in categories { self.categories[category.id] = CategoryValue(name: category.name, icon: category.icon) }
        for location in locations { self.locations[location.id] = LocationValue(location) }
    }

    init() {}

    mutating func apply(_ action: UserAction) {
        switch action {
        case .saveCategory(let id, let name, let icon):
            categories[id] = CategoryValue(name: name, icon: icon)
        case .deleteCategory(let id, let target):
            categories[id] = nil
            for (locationID, location) in locations where location.categoryID == id {
                if let target { locations[locationID]?.categoryID = target } else { locations[locationID] = nil }
            }
        case .saveLocation(let id, let value):
            locations[id] = value
        case .deleteLocation(let id):
            locations[id] = nil
        case .sync:
            break
        }
    }

    /// A readable difference, for failure messages.
    func difference(from other: UserModel) -> String {
        var lines: [String] = []
        for id in Set(categories.keys).union(other.categories.keys) where categories[id] != other.categories[id] {
            lines.append("category \(id.uuidString.prefix(8)): expected \(describe(categories[id])), got \(describe(other.categories[id]))")
        }
        for id in Set(locations.keys).union(other.locations.keys) where locations[id] != other.locations[id] {
            lines.append("location \(id.uuidString.prefix(8)): expected \(describe(locations[id])), got \(describe(other.locations[id]))")
        }
        return lines.sorted().joined(separator: "\n")
    }

    private func describe<Value>(_ value: Value?) -> String {
        value.map { String(describing: $0) } ?? "nothing"
    }
}

extension UserModel.LocationValue {
    init(_ location: Location) {
        self.init(
            categoryID: location.categoryID, name: location.name, address: location.address, description: location.description,
            latitude: location.latitude, longitude: location.longitude, isFavorite: location.isFavorite, imageURLs: location.imageURLs)
    }

    var draft: (UUID) -> LocationDraft {
        { id in
            LocationDraft(
                id: id, categoryID: categoryID, name: name, address: address, description: description, latitude: latitude,
                longitude: longitude, isFavorite: isFavorite, imageURLs: imageURLs)
        }
    }
}

/// One thing the user does. Printed as the history of a failing seed.
enum UserAction: Sendable, CustomStringConvertible {
    case saveCategory(UUID, name: String, icon: String?)
    case deleteCategory(UUID, reassignTo: UUID?)
    case saveLocation(UUID, UserModel.LocationValue)
    case deleteLocation(UUID)
    case sync

    var description: String {
        func short(_ id: UUID) -> String { String(id.uuidString.prefix(4)) }
        switch self {
        case .saveCategory(let id, let name, _): return "category \(short(id)) = \(name)"
        case .deleteCategory(let id, let target): return "delete category \(short(id))" + (target.map { " -> \(short($0))" } ?? "")
        case .saveLocation(let id, let value):
            return "location \(short(id)) = \(value.name) in \(short(value.categoryID))\(value.isFavorite ? " *" : "")"
        case .deleteLocation(let id): return "delete location \(short(id))"
        case .sync: return "sync"
        }
    }
}

/// Draws the user's next actions from the model's current state: category create/rename/delete
/// (cascade and reassign), place create/edit/move/favourite/delete, bursts of place creates larger
/// than a push batch, and offline stretches without a sync.
struct HistoryGenerator {
    var random: SeededGenerator
    let burstSize: ClosedRange<Int>
    /// Actions left in the current offline stretch (no sync until it ends).
    private var offlineLeft = 0
    private var counter = 0
    /// The order in which the generator first saw each record: it picks records by their place
    /// in it, so that a seed plays the same history every time (ordered by their ids, which the
    /// server draws for its default categories, the same seed played another history each run).
    private var seen: [UUID: Int] = [:]

    init(seed: UInt64, burstSize: ClosedRange<Int>) {
        random = SeededGenerator(seed: seed)
        self.burstSize = burstSize
    }

    /// The next actions (one, or a burst), given what the model holds and which categories the
    /// device can see (a new device sees the server's default categories only after its first pull).
    mutating func next(_ model: UserModel, visibleCategories: [UUID]) -> [UserAction] {
        counter += 1
        if offlineLeft > 0 {
            offlineLeft -= 1
        } else if Int.random(in: 0..<40, using: &random) == 0 {
            offlineLeft = Int.random(in: 20...80, using: &random)
        } else if Int.random(in: 0..<12, using: &random) == 0 {
            return [.sync]
        }
        let categories = inOrderSeen(visibleCategories, model)
        let locations = inOrderSeen(model.locations.keys, model)
        var roll = Int.random(in: 0..<100, using: &random)
        if categories.count < 2 { roll = 0 }
        if locations.isEmpty && roll >= 45 { roll = 30 }
        switch roll {
        case 0..<10:
            return [.saveCategory(newID(), name: name("Category"), icon: icon())]
        case 10..<18:
            let id = categories[Int.random(in: 0..<categories.count, using: &random)]
            return [.saveCategory(id, name: name("Renamed"), icon: icon())]
        case 18..<24:
            let id = categories[Int.random(in: 0..<categories.count, using: &random)]
            let others = categories.filter { $0 != id }
            let target = Bool.random(using: &random) ? others.randomElement(using: &random) : nil
            return [.deleteCategory(id, reassignTo: target)]
        case 24..<27:
            let category = categories[Int.random(in: 0..<categories.count, using: &random)]
            return (0..<Int.random(in: burstSize, using: &random)).map { _ in .saveLocation(newID(), newLocation(in: category)) }
        case 27..<45:
            let category = categories[Int.random(in: 0..<categories.count, using: &random)]
            return [.saveLocation(newID(), newLocation(in: category))]
        case 45..<60:
            let id = locations[Int.random(in: 0..<locations.count, using: &random)]
            guard var value = model.locations[id] else { return [] }
            value.name = name("Edited")
            value.address = Bool.random(using: &random) ? "\(Int.random(in: 1...99, using: &random)) rue de la Paix" : nil
            value.description = Bool.random(using: &random) ? "line one\nline two" : nil
            value.latitude = coordinate(90)
            return [.saveLocation(id, value)]
        case 60..<75:
            let id = locations[Int.random(in: 0..<locations.count, using: &random)]
            guard var value = model.locations[id] else { return [] }
            value.categoryID = categories[Int.random(in: 0..<categories.count, using: &random)]
            return [.saveLocation(id, value)]
        case 75..<88:
            let id = locations[Int.random(in: 0..<locations.count, using: &random)]
            guard var value = model.locations[id] else { return [] }
            value.isFavorite.toggle()
            return [.saveLocation(id, value)]
        default:
            let id = locations[Int.random(in: 0..<locations.count, using: &random)]
            return [.deleteLocation(id)]
        }
    }

    var isOffline: Bool { offlineLeft > 0 }

    /// The ids in the order the generator first saw them; ids first seen together (the server's
    /// default categories, a burst of places) in the order of their names, then of their ids.
    private mutating func inOrderSeen(_ ids: some Collection<UUID>, _ model: UserModel) -> [UUID] {
        let new = ids.filter { seen[$0] == nil }.sorted { a, b in
            let (nameA, nameB) = (model.categories[a]?.name ?? "", model.categories[b]?.name ?? "")
            if nameA != nameB { return nameA < nameB }
            return withUnsafeBytes(of: a.uuid) { a in withUnsafeBytes(of: b.uuid) { b in a.lexicographicallyPrecedes(b) } }
        }
        for id in new { seen[id] = seen.count }
        return ids.sorted { seen[$0]! < seen[$1]! }
    }

    /// A version-4 UUID drawn from the seed, so that a seed plays the same records every time.
    private mutating func newID() -> UUID {
        var bytes = (0..<2).flatMap { _ in withUnsafeBytes(of: random.next()) { Array($0) } }
        bytes[6] = bytes[6] & 0x0F | 0x40
        bytes[8] = bytes[8] & 0x3F | 0x80
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9], bytes[10],
                bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }

    private mutating func name(_ prefix: String) -> String {
        let flavours = ["Café", "Bäckerei", "東京", "Rock & Roll", "O'Brien's", "  spaced  ", "🍕"]
        let flavour = flavours.randomElement(using: &random) ?? ""
        return "\(prefix) \(counter) \(flavour)".trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private mutating func icon() -> String? {
        Bool.random(using: &random) ? "https://example.com/icons/\(counter).png" : nil
    }

    private mutating func coordinate(_ limit: Int) -> Double {
        Double(Int.random(in: -limit * 1000...limit * 1000, using: &random)) / 1000
    }

    private mutating func newLocation(in category: UUID) -> UserModel.LocationValue {
        let images = (0..<Int.random(in: 0...2, using: &random)).map { "https://example.com/images/\(counter)-\($0).jpg" }
        return UserModel.LocationValue(
            categoryID: category, name: name("Place"), address: nil, description: nil, latitude: coordinate(90),
            longitude: coordinate(180), isFavorite: Int.random(in: 0..<4, using: &random) == 0, imageURLs: images)
    }
}
