import Postgres

/// The keys of a migrated database as PostgreSQL's catalog states them (pg_class, pg_index,
/// pg_constraint), and the sharding rule checked on them: every table is distributable by the user
/// id, as Citus requires of a distributed table (each primary key, unique index and exclusion
/// constraint contains the distribution column; each foreign key joins the distribution columns of
/// both tables, at the same position).
struct ShardingSchemaCatalog: Sendable {
    /// A table and its columns.
    struct Table: Sendable {
        var name: String
        var columns: [String]
    }

    /// A primary key, unique index or exclusion constraint and its key columns (`(expression)` for
    /// an expression column).
    struct Key: Sendable {
        var table: String
        var name: String
        var kind: String
        var columns: [String]
    }

    /// A foreign key: `columns` of `table` reference `referencedColumns` of `referencedTable`.
    struct ForeignKey: Sendable {
        var table: String
        var name: String
        var columns: [String]
        var referencedTable: String
        var referencedColumns: [String]
    }

    var tables: [Table]
    var keys: [Key]
    var foreignKeys: [ForeignKey]

    /// The column a table would be distributed by: `user_id`, except `users`, whose key `id` is the
    /// user id itself (renaming it would touch every query of the users table for a name only).
    static let distributionColumns: [String: String] = ["users": "id"]
    static let defaultDistributionColumn = "user_id"

    /// Tables that are not user data and would not be distributed: the migration runner's
    /// bookkeeping (one row per migration file, applied once per cluster from the coordinator).
    static let exempt: Set<String> = ["schema_migrations"]

    static func distributionColumn(of table: String) -> String {
        distributionColumns[table] ?? defaultDistributionColumn
    }

    /// Reads the catalog of the current schema.
    static func read(_ pool: ConnectionPool) throws -> ShardingSchemaCatalog {
        try pool.withConnection { connection in
            let tables = try connection.query(
                """
                SELECT t.relname::text,
                       array(SELECT a.attname::text FROM pg_attribute a
                             WHERE a.attrelid = t.oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum)
                FROM pg_class t JOIN pg_namespace s ON s.oid = t.relnamespace
                WHERE t.relkind IN ('r', 'p') AND s.nspname = current_schema()
                ORDER BY 1
                """
            ).map { row in Table(name: try row.decode(0), columns: try row.decode(1)) }

            // Unique indexes (primary keys and unique constraints are backed by one), key columns
            // only (INCLUDE columns do not take part in uniqueness).
            let uniqueIndexes = try connection.query(
                """
                SELECT t.relname::text, i.indexrelid::regclass::text,
                       CASE WHEN i.indisprimary THEN 'primary key' ELSE 'unique index' END,
                       array(SELECT coalesce(a.attname::text, '(expression)')
                             FROM unnest(i.indkey::int2[]) WITH ORDINALITY k(attnum, n)
                             LEFT JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
                             WHERE k.n <= i.indnkeyatts ORDER BY k.n)
                FROM pg_index i
                JOIN pg_class t ON t.oid = i.indrelid
                JOIN pg_namespace s ON s.oid = t.relnamespace
                WHERE i.indisunique AND s.nspname = current_schema()
                ORDER BY 1, 2
                """
            ).map { row in Key(table: try row.decode(0), name: try row.decode(1), kind: try row.decode(2), columns: try row.decode(3)) }

            let exclusions = try connection.query(
                """
                SELECT t.relname::text, c.conname::text, 'exclusion constraint',
                       array(SELECT coalesce(a.attname::text, '(expression)')
                             FROM unnest(c.conkey) WITH ORDINALITY k(attnum, n)
                             LEFT JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum ORDER BY k.n)
                FROM pg_constraint c
                JOIN pg_class t ON t.oid = c.conrelid
                JOIN pg_namespace s ON s.oid = t.relnamespace
                WHERE c.contype = 'x' AND s.nspname = current_schema()
                ORDER BY 1, 2
                """
            ).map { row in Key(table: try row.decode(0), name: try row.decode(1), kind: try row.decode(2), columns: try row.decode(3)) }

            let foreignKeys = try connection.query(
                """
                SELECT t.relname::text, c.conname::text,
                       array(SELECT a.attname::text FROM unnest(c.conkey) WITH ORDINALITY k(attnum, n)
                             JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum ORDER BY k.n),
                       r.relname::text,
                       array(SELECT a.attname::text FROM unnest(c.confkey) WITH ORDINALITY k(attnum, n)
                             JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.attnum ORDER BY k.n)
                FROM pg_constraint c
                JOIN pg_class t ON t.oid = c.conrelid
                JOIN pg_class r ON r.oid = c.confrelid
                JOIN pg_namespace s ON s.oid = t.relnamespace
                WHERE c.contype = 'f' AND s.nspname = current_schema()
                ORDER BY 1, 2
                """
            ).map { row in
                ForeignKey(
                    table: try row.decode(0), name: try row.decode(1), columns: try row.decode(2),
                    referencedTable: try row.decode(3), referencedColumns: try row.decode(4))
            }
            return ShardingSchemaCatalog(tables: tables, keys: uniqueIndexes + exclusions, foreignKeys: foreignKeys)
        }
    }

    /// What keeps the schema from being distributed by user id, one sentence each; empty when nothing.
    var violations: [String] {
        var found: [String] = []
        for table in tables where !Self.exempt.contains(table.name) {
            let column = Self.distributionColumn(of: table.name)
            if !table.columns.contains(column) {
                found.append("table \(table.name) has no \(column) column")
            }
        }
        for key in keys where !Self.exempt.contains(key.table) {
            let column = Self.distributionColumn(of: key.table)
            if !key.columns.contains(column) {
                found.append("\(key.kind) \(key.name) of \(key.table) is (\(key.columns.joined(separator: ", "))), without \(column)")
            }
        }
        for foreignKey in foreignKeys {
            let description =
                "foreign key \(foreignKey.name): \(foreignKey.table) (\(foreignKey.columns.joined(separator: ", "))) references "
                + "\(foreignKey.referencedTable) (\(foreignKey.referencedColumns.joined(separator: ", ")))"
            if Self.exempt.contains(foreignKey.table) || Self.exempt.contains(foreignKey.referencedTable) {
                found.append("\(description), a table that is not distributed")
                continue
            }
            let column = Self.distributionColumn(of: foreignKey.table)
            let referenced = Self.distributionColumn(of: foreignKey.referencedTable)
            guard let position = foreignKey.columns.firstIndex(of: column),
                position < foreignKey.referencedColumns.count, foreignKey.referencedColumns[position] == referenced
            else {
                found.append("\(description), not \(column) to \(referenced)")
                continue
            }
        }
        return found
    }
}
