/// The values a route pattern's `{name}` segments captured, percent-decoded.
public struct PathParameters: Sendable, Equatable {
    /// The captured (name, value) pairs in pattern order.
    public let all: [Parameter]

    /// One captured parameter.
    public struct Parameter: Sendable, Equatable {
        /// The name between braces in the pattern.
        public let name: String
        /// The percent-decoded segment value.
        public let value: String
    }

    /// Parameters from (name, value) pairs.
    public init(_ pairs: [(name: String, value: String)] = []) {
        all = pairs.map { Parameter(name: $0.name, value: $0.value) }
    }

    /// The value captured by `{name}`, or nil.
    public subscript(name: String) -> String? {
        all.first { $0.name == name }?.value
    }
}
