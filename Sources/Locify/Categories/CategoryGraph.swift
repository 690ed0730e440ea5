import FoundationEssentials
import Postgres

/// Where the locations placed in each of a user's categories are shown (openapi.yaml, "Writes in
/// any order"): a location's own last write names a category, and that category's current state
/// decides. A live category shows them; one deleted with a reassign shows them where its target
/// does (followed from target to target); one deleted with a cascade, or a chain of reassigns that
/// loops, shows them deleted. So the state is a function of each record's newest write, whatever
/// order the writes arrived in.
struct CategoryGraph {
    /// Where the locations placed in a category are shown.
    enum Placement: Equatable {
        /// In this live category.
        case shown(in: UUID)
        /// Deleted with the category (a cascade), until the category comes back.
        case hidden
    }

    /// A category's state as far as its locations are concerned.
    private struct Node {
        var isDeleted: Bool
        var reassignedTo: UUID?
    }

    private let nodes: [UUID: Node]

    /// The user's categories, live and deleted, as the transaction sees them.
    static func load(_ connection: PostgresConnection, userID: String) throws -> CategoryGraph {
        var nodes: [UUID: Node] = [:]
        for node in try CategoryStore.graphNodes(connection, userID: userID) {
            nodes[node.id] = Node(isDeleted: node.isDeleted, reassignedTo: node.reassignedTo)
        }
        return CategoryGraph(nodes: nodes)
    }

    /// Where locations placed in `category` are shown; nil when the user never had it.
    func placement(of category: UUID) -> Placement? {
        guard nodes[category] != nil else { return nil }
        var current = category
        var visited: Set<UUID> = []
        while let node = nodes[current], node.isDeleted {
            // A cascade, a target gone (purged), or a loop of reassigns: nowhere to show them.
            guard let target = node.reassignedTo, nodes[target] != nil, visited.insert(current).inserted else { return .hidden }
            current = target
        }
        return nodes[current] == nil ? .hidden : .shown(in: current)
    }

    /// The category deleted with a cascade where `category`'s reassign chain ends, whose locations
    /// include those placed in `category` (itself when it is that category); nil when the chain
    /// ends at a live category, a purged target or a loop.
    func cascadeEnd(of category: UUID) -> UUID? {
        var current = category
        var visited: Set<UUID> = []
        while let node = nodes[current], node.isDeleted, visited.insert(current).inserted {
            guard let target = node.reassignedTo else { return current }
            current = target
        }
        return nil
    }

    /// The categories whose locations are shown according to `category`'s state: itself and every
    /// deleted category whose reassign chain passes through it.
    func dependents(of category: UUID) -> [UUID] {
        nodes.keys.filter { start in
            var current = start
            var visited: Set<UUID> = []
            while visited.insert(current).inserted {
                if current == category { return true }
                guard let node = nodes[current], node.isDeleted, let target = node.reassignedTo else { return false }
                current = target
            }
            return false
        }
    }
}

extension CategoryGraph.Placement {
    /// The `category_id` of a location placed in `category`: where it is shown, or for a hidden
    /// one the category itself.
    func shownCategory(_ category: UUID) -> UUID {
        if case .shown(let shown) = self { return shown }
        return category
    }

    /// The `own_category_id` of a location placed in `category`: the category, when the location
    /// is shown in another one; nil otherwise.
    func ownCategory(_ category: UUID) -> UUID? {
        shownCategory(category) == category ? nil : category
    }

    /// `shownCategory` of the category a location write names.
    func shownCategory(_ draft: LocationDraft) -> UUID { shownCategory(draft.categoryID) }

    /// `ownCategory` of the category a location write names.
    func ownCategory(_ draft: LocationDraft) -> UUID? { ownCategory(draft.categoryID) }
}
