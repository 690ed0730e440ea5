import LocifyRules
import Logging
import Primitives
import Synchronization

/// Counts, by reason, the Storage clean-ups the server skips because their object name cannot
/// exist at Google (a stored URL decoding to a control character or to more than 1,024 bytes),
/// and logs a warning for each: such a value must never fail a deletion or hold a job forever.
/// Rendered as `cleanup_jobs_skipped_total{reason}` by `/metrics`.
public final class CleanupSkips: Sendable {
    private let counts = Mutex<[String: Int]>([:])
    private let logger: Logger

    /// Zero counts; each skip is logged as a warning on `logger`.
    public init(logger: Logger) {
        self.logger = logger
    }

    /// Every reason with its count (zero included), sorted by reason.
    public var snapshot: [(reason: String, count: Int)] {
        let counts = counts.withLock { $0 }
        return StorageObjectReference.ObjectNameProblem.allCases.map(\.rawValue).sorted().map { ($0, counts[$0] ?? 0) }
    }

    /// Counts one skipped object and logs it (the name shortened and escaped: it is hostile).
    package func record(_ problem: StorageObjectReference.ObjectNameProblem, userID: String, objectName: String, stage: String) {
        counts.withLock { $0[problem.rawValue, default: 0] += 1 }
        logger.warning(
            "clean-up skipped a Storage object whose name cannot exist",
            metadata: [
                "reason": "\(problem.rawValue)", "user_id": "\(userID)", "stage": "\(stage)",
                "object": "\(Self.excerpt(objectName))", "object_bytes": "\(objectName.utf8.count)",
            ])
    }

    /// The first `limit` scalars, control characters as `\u{..}`.
    package static func excerpt(_ text: String, limit: Int = 80) -> String {
        var out = ""
        for scalar in text.unicodeScalars.prefix(limit) {
            if ControlCharacter.isControl(scalar) {
                out += "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return text.unicodeScalars.count > limit ? out + "..." : out
    }
}
