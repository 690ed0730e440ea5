import Foundation
import Postgres
import TestSupport
import TestSupportDatabase

/// A temporary copy of the project's migrations numbered below one, for a test of that migration
/// over rows the schema before it wrote; removed with the value.
final class MigrationsBefore {
    let path: String
    /// What running every project migration applies after this folder's, in order.
    let remaining: [String]

    init(_ number: String) throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("locify-before-\(number)-" + UUID().uuidString).path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let names = try FileManager.default.contentsOfDirectory(atPath: ProjectPaths.migrations).filter { $0.hasSuffix(".sql") }.sorted()
        for name in names where name < number {
            try FileManager.default.copyItem(atPath: ProjectPaths.migrations + "/" + name, toPath: path + "/" + name)
        }
        remaining = names.filter { $0 >= number }
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Applies this folder's migrations to `database`, lets `writeRows` store rows as the schema
    /// before them did, then applies every project migration; returns the names that last run
    /// applied.
    func upgrade(_ database: TestDatabase, writingRows writeRows: (PostgresConnection) throws -> Void) throws -> [String] {
        _ = try MigrationRunner(directory: path, logger: TestDatabase.logger).run(using: database.pool)
        try database.pool.withConnection { connection in try writeRows(connection) }
        return try MigrationRunner(directory: ProjectPaths.migrations, logger: TestDatabase.logger).run(using: database.pool)
    }
}
