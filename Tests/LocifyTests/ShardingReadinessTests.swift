import Foundation
import Postgres
import Testing
import TestSupport
import TestSupportDatabase

/// Ready to shard by user id (issue 14, README "Sharding by user_id"): the schema the migrations
/// build keeps every key and foreign key on the user id (Citus' rule for a distributed table), and
/// no query of the code joins rows of two users.
@Suite("Sharding readiness: keys and joins stay within one user")
struct ShardingReadinessTests {
    @Test("every primary key, unique index and foreign key of the migrated schema includes user_id")
    func schemaKeysIncludeUserID() throws {
        let database = try TestDatabase.create(migrationsDirectory: ProjectPaths.migrations, poolSize: 1)
        defer { try? database.drop() }
        let catalog = try ShardingSchemaCatalog.read(database.pool)

        // The catalog was read at all (a vacuous pass would prove nothing).
        let tables = Set(catalog.tables.map(\.name))
        #expect(tables.isSuperset(of: ["users", "categories", "locations", "cleanup_jobs", "account_deletions", "schema_migrations"]))
        #expect(catalog.keys.contains { $0.table == "categories" && $0.kind == "primary key" && $0.columns == ["user_id", "id"] })
        #expect(catalog.foreignKeys.contains { $0.table == "categories" && $0.referencedTable == "users" })

        #expect(catalog.violations == [], "\(catalog.violations.joined(separator: "\n"))")
    }

    @Test("the schema check reports a key, unique index, exclusion constraint or foreign key without user_id, and a table without it")
    func schemaCheckCatchesViolations() throws {
        let database = try TestDatabase.create(migrationsDirectory: ProjectPaths.migrations, poolSize: 1)
        defer { try? database.drop() }
        try database.pool.withConnection { connection in
            try connection.execute(
                unsafeSQL: """
                    CREATE TABLE shard_bad_key (id bigint PRIMARY KEY, user_id text NOT NULL, code text);
                    CREATE UNIQUE INDEX shard_bad_unique ON shard_bad_key (code);
                    CREATE UNIQUE INDEX shard_good_unique ON shard_bad_key (user_id, code) INCLUDE (id);
                    CREATE TABLE shard_bad_fk (
                        user_id text NOT NULL, id uuid NOT NULL, owner text REFERENCES users (id),
                        PRIMARY KEY (user_id, id),
                        FOREIGN KEY (user_id, id) REFERENCES categories (user_id, id));
                    CREATE TABLE shard_no_user (id bigint PRIMARY KEY);
                    CREATE TABLE shard_bad_exclusion (user_id text NOT NULL, slot int4range,
                        PRIMARY KEY (user_id), EXCLUDE USING gist (slot WITH &&));
                    """)
        }
        // Only the tables made here: the real schema has its own test above.
        let violations = try ShardingSchemaCatalog.read(database.pool).violations.filter { $0.contains("shard_") }
        #expect(
            violations.sorted() == [
                "exclusion constraint shard_bad_exclusion_slot_excl of shard_bad_exclusion is (slot), without user_id",
                "foreign key shard_bad_fk_owner_fkey: shard_bad_fk (owner) references users (id), not user_id to id",
                "primary key shard_bad_key_pkey of shard_bad_key is (id), without user_id",
                "primary key shard_no_user_pkey of shard_no_user is (id), without user_id",
                "table shard_no_user has no user_id column",
                "unique index shard_bad_unique of shard_bad_key is (code), without user_id",
            ], "\(violations.joined(separator: "\n"))")
    }

    @Test("no SQL statement in Sources/ or migrations/ joins rows without equating the user key of both sides")
    func queriesJoinWithinOneUser() throws {
        let statements = try Self.codeStatements()
        let joins = statements.flatMap(ShardingSQLScanner.joins(in:))
        // The scan found the code's SQL and its joins (listings join users to their rows; the
        // tombstone purge updates users from the purged rows).
        #expect(statements.count >= 30, "only \(statements.count) SQL literals found")
        #expect(joins.filter { $0.kind == "JOIN" }.count >= 4, "\(joins)")
        #expect(joins.contains { $0.kind == "UPDATE ... FROM" }, "\(joins)")

        let unlinked = joins.filter { !$0.linked }
        #expect(unlinked.isEmpty, "\(unlinked.map(\.description).joined(separator: "\n"))")
    }

    @Test(
        "the join check flags joins that do not equate the user key",
        arguments: [
            "SELECT * FROM categories c JOIN locations l ON l.category_id = c.id",
            "SELECT * FROM categories c LEFT JOIN locations l ON l.category_id = c.id AND l.user_id = $1",
            "SELECT * FROM categories c, locations l WHERE l.category_id = c.id",
            "UPDATE users u SET name = l.name FROM locations l WHERE l.id = $1",
            "DELETE FROM locations l USING categories c WHERE c.id = l.category_id",
            "SELECT * FROM users u CROSS JOIN LATERAL (SELECT * FROM locations WHERE id = u.change_seq) x",
            "SELECT * FROM users u CROSS JOIN LATERAL (SELECT l.name FROM locations l) x",
            "SELECT 1 FROM users u JOIN users v ON v.email = u.email -- a user_id = user_id comment does not count",
        ])
    func joinCheckFlags(sql: String) {
        let joins = ShardingSQLScanner.joins(in: .init(location: "example", text: sql))
        #expect(joins.count == 1 && joins.allSatisfy { !$0.linked }, "\(joins)")
    }

    @Test(
        "the join check accepts joins on the user key and joins with functions",
        arguments: [
            "SELECT * FROM categories c JOIN locations l ON l.user_id = c.user_id AND l.category_id = c.id",
            "SELECT * FROM users u LEFT JOIN categories c ON c.user_id = u.id AND c.id = $1 WHERE u.id = $2",
            "SELECT * FROM users AS owner JOIN locations l ON owner.id = l.user_id",
            "SELECT * FROM categories c JOIN locations l USING (user_id, id)",
            "SELECT * FROM users u LEFT JOIN LATERAL (SELECT * FROM categories WHERE user_id = u.id LIMIT 5) c ON true",
            "SELECT * FROM categories c, locations l WHERE c.user_id = l.user_id",
            "INSERT INTO categories SELECT n.id, d.id FROM new_user n, unnest($1, $2) AS d(id, name)",
            "UPDATE users u SET purged_seq = p.seq FROM (SELECT user_id, max(change_seq) AS seq FROM purged GROUP BY user_id) p WHERE u.id = p.user_id",
            "SELECT * FROM categories c CROSS JOIN unnest($1) AS x(id)",
            "SELECT * FROM users u CROSS JOIN LATERAL (SELECT (SELECT count(*) FROM categories WHERE user_id = $1) AS n) total",
        ])
    func joinCheckAccepts(sql: String) {
        let joins = ShardingSQLScanner.joins(in: .init(location: "example", text: sql))
        #expect(joins.allSatisfy { $0.linked }, "\(joins)")
    }

    @Test("SQL literals are read from Swift source with their interpolations, comments skipped")
    func swiftLiterals() {
        let source = #"""
            // "SELECT * FROM commented JOIN out ON true"
            let a = connection.query("SELECT id FROM users WHERE id = \(caller.userID) AND name = \(name("x)\"y"))")
            let b = """
                SELECT u.id, \(unsafeSQL: Category.columns("c"))
                FROM users u
                LEFT JOIN categories c ON c.user_id = u.id
                """
            /* "UPDATE nothing" */ let c = "no sql here"
            """#
        let literals = ShardingSQLScanner.sqlLiterals(inSwift: source, file: "Example.swift")
        #expect(literals.map(\.location) == ["Example.swift:2", "Example.swift:3"])
        #expect(literals.first?.text == "SELECT id FROM users WHERE id = $? AND name = $?")
        #expect(literals.last?.text.contains("SELECT u.id, $?\n") == true, "\(literals)")
        #expect(literals.last?.text.contains("LEFT JOIN categories c ON c.user_id = u.id") == true, "\(literals)")
    }

    /// The SQL string literals of every Swift file under Sources/ that talks to the server's
    /// database, and each migration file whole. LocifyClient's SQL runs on one device's own
    /// SQLite store, which holds one user's rows and has no user key to shard on.
    static func codeStatements() throws -> [ShardingSQLScanner.Statement] {
        var statements: [ShardingSQLScanner.Statement] = []
        let root = ProjectPaths.root
        let sources = root.appendingPathComponent("Sources")
        guard let files = FileManager.default.enumerator(atPath: sources.path) else {
            throw TestDatabaseError("cannot list \(sources.path)")
        }
        for case let path as String in files where path.hasSuffix(".swift") && !path.hasPrefix("LocifyClient/") {
            let text = try String(contentsOf: sources.appendingPathComponent(path), encoding: .utf8)
            statements += ShardingSQLScanner.sqlLiterals(inSwift: text, file: "Sources/\(path)")
        }
        for name in try FileManager.default.contentsOfDirectory(atPath: ProjectPaths.migrations) where name.hasSuffix(".sql") {
            let text = try String(contentsOfFile: ProjectPaths.migrations + "/" + name, encoding: .utf8)
            statements.append(.init(location: "migrations/\(name)", text: text))
        }
        return statements
    }
}
