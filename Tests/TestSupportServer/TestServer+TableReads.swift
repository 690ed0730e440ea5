import Foundation
import LocifyServer
import Postgres
import TestSupport

/// Statements counted by PostgreSQL's statistics: how many times a table was read, so a test can
/// assert how many queries a request cost.
extension TestServer {
    /// The dependencies of a server whose table reads a test counts: no background worker runs
    /// (each reads `users`, `categories` or `cleanup_jobs` at start, when woken and every few
    /// seconds; on a loaded machine the cascade worker's look every 5 s, and then a worker's first
    /// run, landed between two counts).
    public static let countingTableReads: @Sendable (inout ApplicationDependencies) -> Void = { dependencies in
        dependencies.runsBackgroundWorkers = false
    }

    /// Scans (sequential and index) of `table` so far. It first ends the server's other database
    /// sessions, because PostgreSQL adds a session's table statistics when the session ends; the
    /// pool opens new ones on the next request.
    public func tableReads(_ table: String) throws -> Int64 {
        let pids = try pool.withConnection { connection in
            try connection.query(
                """
                SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity
                WHERE datname = current_database() AND pid <> pg_backend_pid()
                """
            ).map { row in try row.decode(0, as: Int32.self) }
        }
        let exited = eventually(timeout: .seconds(30)) {
            let remaining = try? pool.withConnection { connection in
                try connection.query("SELECT count(*)::bigint FROM pg_stat_activity WHERE pid = ANY(\(pids))").first?
                    .decode(0, as: Int64.self)
            }
            return remaining == 0
        }
        guard exited else { throw TableReadsError.sessionsDidNotEnd }
        return try pool.withConnection { connection in
            try connection.query(
                """
                SELECT (seq_scan + coalesce(idx_scan, 0))::bigint FROM pg_stat_user_tables
                WHERE relname = \(table) AND schemaname = current_schema()
                """
            ).first?.decode(0, as: Int64.self) ?? -1
        }
    }
}

/// The server's database sessions did not end within 30 s, so the statistics are incomplete.
public enum TableReadsError: Error, Sendable {
    /// See the type.
    case sessionsDidNotEnd
}
