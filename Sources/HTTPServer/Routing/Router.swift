/// A route table mapping (method, path pattern) to handlers. Build it with `add`, then use it as
/// an immutable value. Patterns are `/`-separated segments, literal or `{name}`, e.g.
/// `/v1/locations/{id}`.
///
/// Matching works on the raw (not percent-decoded) path: a literal segment beats a `{param}`
/// segment at the same position (with backtracking), a parameter never matches an empty segment,
/// and a trailing slash makes a different path. HEAD matches a GET route when the path has no
/// HEAD route.
public struct Router<Handler: Sendable>: Sendable {
    private struct Route: Sendable {
        let handler: Handler
        let pattern: String
        let parameterNames: [String]
    }

    private struct Node: Sendable {
        var literalChildren: [String: Int] = [:]
        var parameterChild: Int?
        var routes: [HTTPMethod: Route] = [:]
    }

    /// The trie, flattened; node 0 is the root.
    private var nodes: [Node] = [Node()]

    /// An empty table.
    public init() {}

    /// Registers `handler` for `method` on `pattern` (which starts with `/`). Registering the same
    /// method and pattern again replaces the handler.
    public mutating func add(_ method: HTTPMethod, _ pattern: String, _ handler: Handler) {
        var current = 0
        var parameterNames: [String] = []
        for segment in Self.segments(of: pattern) {
            if segment.hasPrefix("{") && segment.hasSuffix("}") && segment.count >= 2 {
                parameterNames.append(String(segment.dropFirst().dropLast()))
                if let child = nodes[current].parameterChild {
                    current = child
                } else {
                    nodes.append(Node())
                    nodes[current].parameterChild = nodes.count - 1
                    current = nodes.count - 1
                }
            } else {
                let key = String(segment)
                if let child = nodes[current].literalChildren[key] {
                    current = child
                } else {
                    nodes.append(Node())
                    nodes[current].literalChildren[key] = nodes.count - 1
                    current = nodes.count - 1
                }
            }
        }
        nodes[current].routes[method] = Route(handler: handler, pattern: pattern, parameterNames: parameterNames)
    }

    /// Every registered (method, pattern) pair, sorted by pattern then method: the route table as
    /// documentation and contract tests see it (HEAD is implied by GET and not listed).
    public var routes: [(method: HTTPMethod, pattern: String)] {
        entries.map { (method: $0.method, pattern: $0.pattern) }
    }

    /// Every registered route with its handler, sorted as `routes`: lets an application derive
    /// what it needs before routing (which paths are answered inline, say) from the table itself.
    public var entries: [(method: HTTPMethod, pattern: String, handler: Handler)] {
        nodes.flatMap { node in node.routes.map { (method: $0.key, pattern: $0.value.pattern, handler: $0.value.handler) } }
            .sorted { ($0.pattern, $0.method) < ($1.pattern, $1.method) }
    }

    /// Finds the route for `method` and the raw `path`.
    public func match(_ method: HTTPMethod, path: String) -> RouteMatch<Handler> {
        guard path.utf8.first == UInt8(ascii: "/") else { return .notFound }
        let segments = Self.segments(of: path)
        var captured: [Substring] = []
        guard let terminal = search(node: 0, depth: 0, segments: segments, captured: &captured) else {
            return .notFound
        }
        let routes = nodes[terminal].routes
        guard let route = routes[method] ?? (method == .HEAD ? routes[.GET] : nil) else {
            var allowed = Set(routes.keys)
            if allowed.contains(.GET) { allowed.insert(.HEAD) }
            return .methodNotAllowed(allowed: allowed.sorted())
        }
        let parameters = PathParameters(
            zip(route.parameterNames, captured).map { name, raw in
                (name: name, value: PercentDecoding.decodePathSegment(raw.utf8))
            })
        return .found(route.handler, parameters: parameters, pattern: route.pattern)
    }

    /// Depth-first search, literal children first: the index of the node matching every segment
    /// that holds at least one route.
    private func search(node: Int, depth: Int, segments: [Substring], captured: inout [Substring]) -> Int? {
        if depth == segments.count {
            return nodes[node].routes.isEmpty ? nil : node
        }
        let segment = segments[depth]
        if let child = nodes[node].literalChildren[String(segment)],
            let found = search(node: child, depth: depth + 1, segments: segments, captured: &captured)
        {
            return found
        }
        if let child = nodes[node].parameterChild, !segment.isEmpty {
            captured.append(segment)
            if let found = search(node: child, depth: depth + 1, segments: segments, captured: &captured) {
                return found
            }
            captured.removeLast()
        }
        return nil
    }

    /// The segments after the leading `/`: `/` gives `[""]`, `/a/` gives `["a", ""]`.
    private static func segments(of path: String) -> [Substring] {
        path.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
    }
}
