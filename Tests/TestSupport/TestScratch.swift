import Foundation

/// One scratch folder per test process for the files tests hand to servers (service-account keys,
/// server logs). It is removed when the process exits, so test runs leave nothing behind in /tmp.
public enum TestScratch {
    /// `$TMPDIR/locify-tests-<pid>`, created on first use.
    public static let directory: URL = {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("locify-tests-\(getpid())")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: TestScratch.directory) }
        return url
    }()

    /// A path in the scratch folder no other caller gets, ending in `name`.
    public static func uniquePath(_ name: String) -> URL {
        directory.appendingPathComponent("\(UUID().uuidString.prefix(8))-\(name)")
    }
}
