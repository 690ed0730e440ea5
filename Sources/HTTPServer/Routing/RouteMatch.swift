/// The result of looking a request up in a `Router`.
public enum RouteMatch<Handler: Sendable>: Sendable {
    /// A route matched: its handler, the captured parameters and the pattern (for metrics/logs).
    case found(Handler, parameters: PathParameters, pattern: String)
    /// No pattern matches the path.
    case notFound
    /// A pattern matches the path but not the method; `allowed` is sorted and includes HEAD when
    /// GET exists (for the `Allow` header).
    case methodNotAllowed(allowed: [HTTPMethod])
}
