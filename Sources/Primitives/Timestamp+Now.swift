import Glibc
import LocifyRules

extension Timestamp {
    /// The current wall-clock time (`CLOCK_REALTIME`), truncated to milliseconds. Here rather than
    /// beside `Timestamp` because the clock is read through Glibc, which `LocifyRules` (built for
    /// iOS too) must not import.
    public static func now() -> Timestamp {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Timestamp(milliseconds: Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000)
    }
}
