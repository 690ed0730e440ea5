import FoundationEssentials
import Logging

/// Applies the numbered SQL files of a directory (`0001_init.sql`, `0002_...sql`), each once.
///
/// Each pending file runs, with its row in `schema_migrations` (name, checksum, applied_at), in
/// its own transaction, as a simple query (several statements allowed; no `BEGIN`/`COMMIT` of its
/// own, nothing that cannot run in a transaction such as `CREATE INDEX CONCURRENTLY`). A session
/// advisory lock serialises runners, so processes starting together apply every file once.
public struct MigrationRunner: Sendable {
    /// The directory holding the migration files.
    public let directory: String
    private let logger: Logger

    /// The `pg_advisory_lock` key that serialises runners (the bytes of "LocifyMg").
    static let advisoryLockKey: Int64 = 0x4C6F_6369_6679_4D67

    /// A runner for the `.sql` files in `directory`; other files are ignored.
    public init(directory: String, logger: Logger) {
        self.directory = directory
        self.logger = logger
    }

    /// Applies pending `NNNN_name.sql` files in order, each once, each in its own transaction, under a
    /// session advisory lock (two processes starting together are safe), recording name + checksum +
    /// applied_at in `schema_migrations`; throws (kind .migration, clear message naming the file) when
    /// an applied file's checksum changed or a file is missing/unreadable. Returns the names applied.
    public func run(using pool: ConnectionPool) throws -> [String] {
        let files = try migrationFiles()
        return try pool.withConnection { connection throws(PostgresError) in
            try connection.query("SELECT pg_advisory_lock(\(Self.advisoryLockKey))")
            defer {
                do {
                    try connection.query("SELECT pg_advisory_unlock(\(Self.advisoryLockKey))")
                } catch {
                    logger.warning("could not release the migration lock", metadata: ["error": "\(error)"])
                }
            }
            return try apply(files, on: connection)
        }
    }

    /// One migration file: its name, its numeric prefix and its SQL.
    struct MigrationFile {
        var name: String
        var number: Int
        var sql: String
    }

    /// Reads the directory's `.sql` files, sorted by their numeric prefix.
    func migrationFiles() throws(PostgresError) -> [MigrationFile] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw migrationError("cannot read the migrations directory \(directory)")
        }
        var files: [MigrationFile] = []
        for name in names where name.hasSuffix(".sql") {
            let digits = name.prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, name.dropFirst(digits.count).hasPrefix("_"), let number = Int(digits) else {
                throw migrationError("migration file \(name) must be named NNNN_description.sql")
            }
            let path = directory.isEmpty || directory.hasSuffix("/") ? directory + name : directory + "/" + name
            guard let data = FileManager.default.contents(atPath: path) else {
                throw migrationError("migration file \(name) cannot be read")
            }
            guard let sql = String(data: data, encoding: .utf8) else {
                throw migrationError("migration file \(name) is not valid UTF-8")
            }
            files.append(MigrationFile(name: name, number: number, sql: sql))
        }
        files.sort { ($0.number, $0.name) < ($1.number, $1.name) }
        for (previous, next) in zip(files, files.dropFirst()) where previous.number == next.number {
            throw migrationError("migration files \(previous.name) and \(next.name) have the same number")
        }
        return files
    }

    private func apply(_ files: [MigrationFile], on connection: PostgresConnection) throws(PostgresError) -> [String] {
        try connection.execute(
            unsafeSQL: """
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    name text PRIMARY KEY,
                    checksum text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """
        )
        var recorded: [String: String] = [:]
        for row in try connection.query("SELECT name, checksum FROM schema_migrations") {
            recorded[try row.decode(0, as: String.self)] = try row.decode(1, as: String.self)
        }
        let fileNames = Set(files.map(\.name))
        if let missing = recorded.keys.sorted().first(where: { !fileNames.contains($0) }) {
            throw migrationError("migration \(missing) was applied but its file is missing from \(directory)")
        }

        var pending: [(file: MigrationFile, checksum: String)] = []
        for file in files {
            let checksum = try checksum(of: file.sql, on: connection)
            if let recordedChecksum = recorded[file.name] {
                guard recordedChecksum == checksum else {
                    throw migrationError("migration \(file.name) was changed after it was applied (checksum differs); add a new migration instead")
                }
                if let earlier = pending.first {
                    throw migrationError("migration \(earlier.file.name) is pending but the later \(file.name) is already applied")
                }
            } else {
                pending.append((file, checksum))
            }
        }

        var applied: [String] = []
        for (file, checksum) in pending {
            try apply(file, checksum: checksum, on: connection)
            logger.info("applied migration", metadata: ["migration": "\(file.name)"])
            applied.append(file.name)
        }
        return applied
    }

    private func apply(_ file: MigrationFile, checksum: String, on connection: PostgresConnection) throws(PostgresError) {
        do throws(PostgresError) {
            // A migration may rewrite big tables: no statement timeout inside it.
            try connection.execute(unsafeSQL: "BEGIN; SET LOCAL statement_timeout = 0")
            try connection.execute(unsafeSQL: file.sql)
            try connection.query("INSERT INTO schema_migrations (name, checksum) VALUES (\(file.name), \(checksum))")
            try connection.execute(unsafeSQL: "COMMIT")
        } catch {
            if !connection.isBroken, connection.transactionStatus != .idle {
                try? connection.execute(unsafeSQL: "ROLLBACK")
            }
            var failure = error
            failure.kind = error.isUnavailable ? error.kind : .migration
            failure.message = "migration \(file.name) failed and was rolled back: \(error.message)"
            throw failure
        }
    }

    /// SHA-256 of the file's text, hex-encoded, computed by the server (no crypto library here).
    private func checksum(of sql: String, on connection: PostgresConnection) throws(PostgresError) -> String {
        let rows = try connection.query("SELECT encode(sha256(convert_to(\(sql), 'UTF8')), 'hex')")
        guard let row = rows.first else {
            throw migrationError("the server returned no checksum")
        }
        return try row.decode(0, as: String.self)
    }

    private func migrationError(_ message: String) -> PostgresError {
        PostgresError(kind: .migration, message: message)
    }
}
