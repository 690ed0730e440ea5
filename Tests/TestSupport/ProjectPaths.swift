import Foundation

/// Paths inside this repository, for tests that need its files (migrations, openapi.yaml).
public enum ProjectPaths {
    /// The repository root (two levels above this file's folder).
    public static let root: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `migrations/`, the folder the server applies at start.
    public static var migrations: String { root.appendingPathComponent("migrations").path }
}
