import Glibc

/// Why the server could not start (or an I/O thread failed). Carries the errno of the failing
/// system call, captured where it failed.
public enum HTTPServerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A system call failed: its name and errno.
    case systemCall(String, errno: Int32)
    /// The listen address could not be resolved: the host and getaddrinfo's message.
    case addressResolution(host: String, message: String)
    /// `start()` was called twice, or after `shutdown`.
    case alreadyStarted
    /// A configuration value is out of range: which one.
    case invalidConfiguration(String)
    /// The open-file limit cannot be raised to what `maxConnections` and the other descriptors
    /// need: the descriptors needed and the hard limit (`ulimit -Hn`).
    case openFileLimit(needed: Int, hardLimit: Int)

    /// What failed, with the failing system call and errno where there is one.
    public var description: String {
        switch self {
        case .systemCall(let name, let code):
            return "\(name) failed: \(String(cString: strerror(code))) (errno \(code))"
        case .addressResolution(let host, let message):
            return "cannot resolve listen address \(host): \(message)"
        case .alreadyStarted:
            return "the server was already started"
        case .invalidConfiguration(let what):
            return "invalid configuration: \(what)"
        case .openFileLimit(let needed, let hardLimit):
            return
                "the connection limit and the server's other descriptors need \(needed) open files, but the hard limit (ulimit -Hn) is \(hardLimit): raise it or lower the connection limit"
        }
    }
}
