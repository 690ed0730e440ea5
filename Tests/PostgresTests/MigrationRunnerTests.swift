import Foundation
import LocifyRules
import Primitives
import Synchronization
import Testing
import TestSupport
import TestSupportDatabase

@testable import Postgres

@Suite("MigrationRunner")
struct MigrationRunnerTests {
    /// A temporary folder of migration files, removed at the end of the test.
    final class MigrationsFolder {
        let path: String

        init(_ files: [String: String]) throws {
            path = NSTemporaryDirectory() + "locify-migrations-" + UUID().uuidString
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            for (name, sql) in files {
                try write(name, sql)
            }
        }

        deinit {
            try? FileManager.default.removeItem(atPath: path)
        }

        func write(_ name: String, _ sql: String) throws {
            try sql.write(toFile: path + "/" + name, atomically: true, encoding: .utf8)
        }

        func remove(_ name: String) throws {
            try FileManager.default.removeItem(atPath: path + "/" + name)
        }
    }

    static func runner(_ folder: MigrationsFolder) -> MigrationRunner {
        MigrationRunner(directory: folder.path, logger: TestDatabase.logger)
    }

    static func recorded(_ database: TestDatabase) throws -> [String] {
        try database.pool.withConnection { connection in
            try connection.query("SELECT name FROM schema_migrations ORDER BY applied_at, name").map { try $0.decode(0, as: String.self) }
        }
    }

    static let baseFiles = [
        "1_people.sql": "CREATE TABLE people (id int4 PRIMARY KEY, name text NOT NULL);",
        "2_pets.sql": """
        CREATE TABLE pets (id int4 PRIMARY KEY, owner int4 NOT NULL REFERENCES people (id));
        INSERT INTO people VALUES (1, 'Ada');
        INSERT INTO pets VALUES (1, 1);
        """,
        "10_pet_names.sql": "ALTER TABLE pets ADD COLUMN name text NOT NULL DEFAULT 'Rex';",
        "README.md": "not a migration",
        "notes.txt": "ignored",
    ]

    @Test("applies pending files in numeric order, records name, checksum and time, ignores other files")
    func appliesInOrder() throws {
        try TestDatabase.with { database in
            let folder = try MigrationsFolder(Self.baseFiles)
            let applied = try Self.runner(folder).run(using: database.pool)
            #expect(applied == ["1_people.sql", "2_pets.sql", "10_pet_names.sql"])
            try database.pool.withConnection { connection in
                let rows = try connection.query("SELECT name, checksum, applied_at FROM schema_migrations ORDER BY name")
                #expect(rows.count == 3)
                for row in rows {
                    let checksum = try row.decode(column: "checksum", as: String.self)
                    #expect(checksum.count == 64)
                    #expect(checksum.allSatisfy { $0.isHexDigit })
                    _ = try row.decode(column: "applied_at", as: Timestamp.self)
                }
                let name = try connection.query("SELECT name FROM pets").first?.decode(0, as: String.self)
                #expect(name == "Rex")
            }
        }
    }

    @Test("a second run applies nothing; a new file is applied alone")
    func idempotent() throws {
        try TestDatabase.with { database in
            let folder = try MigrationsFolder(Self.baseFiles)
            #expect(try Self.runner(folder).run(using: database.pool).count == 3)
            #expect(try Self.runner(folder).run(using: database.pool) == [])
            try folder.write("11_more.sql", "CREATE TABLE toys (id int4);")
            #expect(try Self.runner(folder).run(using: database.pool) == ["11_more.sql"])
            #expect(try Self.recorded(database).count == 4)
        }
    }

    @Test("an applied file whose content changed is refused with an error naming it")
    func checksumChanged() throws {
        try TestDatabase.with { database in
            let folder = try MigrationsFolder(Self.baseFiles)
            _ = try Self.runner(folder).run(using: database.pool)
            try folder.write("2_pets.sql", "CREATE TABLE pets (id int8);")
            try folder.write("11_more.sql", "CREATE TABLE toys (id int4);")
            let error = try #require(throws: PostgresError.self) { try Self.runner(folder).run(using: database.pool) }
            #expect(error.kind == .migration)
            #expect(error.message.contains("2_pets.sql"))
            #expect(error.message.contains("changed"))
            #expect(try Self.recorded(database).count == 3)  // nothing later was applied either
        }
    }

    @Test("an applied file that disappeared is refused with an error naming it")
    func missingFile() throws {
        try TestDatabase.with { database in
            let folder = try MigrationsFolder(Self.baseFiles)
            _ = try Self.runner(folder).run(using: database.pool)
            try folder.remove("10_pet_names.sql")
            let error = try #require(throws: PostgresError.self) { try Self.runner(folder).run(using: database.pool) }
            #expect(error.kind == .migration)
            #expect(error.message.contains("10_pet_names.sql"))
        }
    }

    @Test("a failing migration is rolled back and not recorded; earlier ones stay applied")
    func failingMigration() throws {
        try TestDatabase.with { database in
            let folder = try MigrationsFolder([
                "1_ok.sql": "CREATE TABLE ok (id int4);",
                "2_broken.sql": "CREATE TABLE half (id int4); INSERT INTO ok VALUES (1); SELECT 1 / 0;",
                "3_later.sql": "CREATE TABLE later (id int4);",
            ])
            let error = try #require(throws: PostgresError.self) { try Self.runner(folder).run(using: database.pool) }
            #expect(error.kind == .migration)
            #expect(error.message.contains("2_broken.sql"))
            #expect(error.sqlState == "22012")
            #expect(try Self.recorded(database) == ["1_ok.sql"])
            let tables = try database.pool.withConnection { connection in
                try connection.query("SELECT to_regclass('half') IS NULL, to_regclass('later') IS NULL, (SELECT count(*) FROM ok)")
                    .first.map { [try $0.decode(0, as: Bool.self), try $0.decode(1, as: Bool.self), try $0.decode(2, as: Int.self) == 0] }
            }
            #expect(tables == [true, true, true])
            // Fixed, the file applies on the next run.
            try folder.write("2_broken.sql", "CREATE TABLE half (id int4);")
            #expect(try Self.runner(folder).run(using: database.pool) == ["2_broken.sql", "3_later.sql"])
        }
    }

    @Test("two runners started at once apply each file exactly once")
    func concurrentRunners() throws {
        try TestDatabase.with { database in
            let folder = try MigrationsFolder([
                "1_log.sql": "CREATE TABLE log (migration text NOT NULL); INSERT INTO log VALUES ('1'); SELECT pg_sleep(0.2);",
                "2_more.sql": "INSERT INTO log VALUES ('2'); SELECT pg_sleep(0.1);",
                "3_last.sql": "INSERT INTO log VALUES ('3');",
            ])
            let directory = folder.path
            let configuration = database.configuration
            let start = DispatchSemaphore(value: 0)
            let runners = (0..<2).map { _ in
                BackgroundThread { () throws -> [String] in
                    let pool = ConnectionPool(configuration: configuration, size: 1, logger: TestDatabase.logger)
                    defer { pool.close() }
                    try pool.warmUp()
                    start.wait()
                    return try MigrationRunner(directory: directory, logger: TestDatabase.logger).run(using: pool)
                }
            }
            start.signal()
            start.signal()
            let results = try runners.map { try $0.join() }
            #expect(results.flatMap { $0 }.sorted() == ["1_log.sql", "2_more.sql", "3_last.sql"])
            let log = try database.pool.withConnection { connection in
                try connection.query("SELECT migration FROM log ORDER BY migration").map { try $0.decode(0, as: String.self) }
            }
            #expect(log == ["1", "2", "3"])
        }
    }

    @Test("badly named SQL files, duplicate numbers and a missing directory are clear errors")
    func badFolders() throws {
        try TestDatabase.with { database in
            let unnamed = try MigrationsFolder(["init.sql": "SELECT 1;"])
            let unnamedError = try #require(throws: PostgresError.self) { try Self.runner(unnamed).run(using: database.pool) }
            #expect(unnamedError.message.contains("init.sql"))
            let duplicate = try MigrationsFolder(["1_a.sql": "SELECT 1;", "01_b.sql": "SELECT 1;"])
            let duplicateError = try #require(throws: PostgresError.self) { try Self.runner(duplicate).run(using: database.pool) }
            #expect(duplicateError.message.contains("1_a.sql"))
            let missing = MigrationRunner(directory: "/nonexistent/locify-migrations", logger: TestDatabase.logger)
            let missingError = try #require(throws: PostgresError.self) { try missing.run(using: database.pool) }
            #expect(missingError.kind == .migration)
            #expect(missingError.message.contains("/nonexistent/locify-migrations"))
        }
    }

    @Test("TestDatabase can start from a template with the migrations applied")
    func templateDatabases() throws {
        let folder = try MigrationsFolder(Self.baseFiles)
        let first = try TestDatabase.create(migrationsDirectory: folder.path)
        defer { try? first.drop() }
        let second = try TestDatabase.create(migrationsDirectory: folder.path)
        defer { try? second.drop() }
        #expect(first.name != second.name)
        for database in [first, second] {
            #expect(try Self.recorded(database).count == 3)
            #expect(try Self.runner(folder).run(using: database.pool) == [])
        }
        try first.pool.withConnection { try $0.execute(unsafeSQL: "DELETE FROM pets") }
        let pets = try second.pool.withConnection { try $0.query("SELECT count(*) FROM pets").first?.decode(0, as: Int.self) }
        #expect(pets == 1)
    }
}
