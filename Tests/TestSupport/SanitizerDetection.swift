import Foundation
import Glibc

/// Whether this test process runs under ThreadSanitizer or AddressSanitizer (scripts/sanitizers):
/// memory and time figures mean nothing there (shadow memory, quarantine, 5-20x slower code), so
/// tests that bound them check only their functional part.
public enum SanitizerDetection {
    /// True under TSan or ASan: their options are set, or their runtime is linked in.
    public static var isActive: Bool {
        let environment = ProcessInfo.processInfo.environment
        return environment["TSAN_OPTIONS"] != nil || environment["ASAN_OPTIONS"] != nil
            || dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__tsan_init") != nil
            || dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__asan_init") != nil
    }
}
