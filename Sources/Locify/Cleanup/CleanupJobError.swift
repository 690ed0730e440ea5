/// A clean-up job the worker cannot run at all: the failure is this server's, not Google's, so
/// retrying never helps and the job ends as `failed_permanent` for an operator.
public enum CleanupJobError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The stored kind is none this server knows (a row written by a newer server, or by hand).
    case unknownKind(String)

    /// What `last_error` and the logs show: `unknown job kind frobnicate`.
    public var description: String {
        switch self {
        case .unknownKind(let kind): "unknown job kind \(kind)"
        }
    }
}
