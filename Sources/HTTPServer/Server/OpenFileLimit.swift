import Glibc

/// The process's open-file limit (`RLIMIT_NOFILE`), raised at start to what the server needs:
/// without it, a server allowing 10,000 connections under the usual soft limit of 1,024 would
/// fail its accepts with EMFILE long before its connection limit.
enum OpenFileLimit {
    /// The hard limit (`ulimit -Hn`), nil when unlimited.
    static func hardLimit() throws(HTTPServerError) -> Int? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else {
            throw .systemCall("getrlimit(RLIMIT_NOFILE)", errno: errno)
        }
        return limit.rlim_max == rlim_t.max ? nil : Int(clamping: limit.rlim_max)
    }

    /// Raises the soft limit to `needed` descriptors when it is lower. Throws `openFileLimit`
    /// when the hard limit is lower than `needed` (or cannot be read or raised).
    static func raise(to needed: Int) throws(HTTPServerError) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else {
            throw .systemCall("getrlimit(RLIMIT_NOFILE)", errno: errno)
        }
        let wanted = rlim_t(max(0, needed))
        guard limit.rlim_cur < wanted else { return }
        guard limit.rlim_max == rlim_t.max || limit.rlim_max >= wanted else {
            throw .openFileLimit(needed: needed, hardLimit: Int(clamping: limit.rlim_max))
        }
        limit.rlim_cur = wanted
        guard setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else {
            throw .openFileLimit(needed: needed, hardLimit: Int(clamping: limit.rlim_max))
        }
    }
}
