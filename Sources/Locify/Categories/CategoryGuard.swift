import LocifyRules
import Postgres

/// The database's own check that a live location belongs to a live category (the
/// `locations_counters` trigger of the schema), which raises this SQLSTATE.
enum CategoryGuard {
    static let sqlState = "LC001"

    /// Maps the trigger's error to the API's "unknown category" (E007); other errors pass through.
    static func mapping(_ error: any Error) -> any Error {
        if let error = error as? PostgresError, error.sqlState == sqlState { return LocifyError(.unknownCategory) }
        return error
    }
}
