/// The isolation level a transaction runs at (PostgreSQL's `READ UNCOMMITTED` is `READ COMMITTED`).
public enum TransactionIsolation: Sendable, Hashable {
    /// Each statement sees data committed before it began (PostgreSQL's default).
    case readCommitted
    /// Every statement sees the snapshot taken at the transaction's first statement.
    case repeatableRead
    /// Like repeatable read, and the outcome equals some serial order; may fail with 40001.
    case serializable

    /// The `BEGIN` statement for this level.
    func beginStatement(readOnly: Bool) -> String {
        let level: String
        switch self {
        case .readCommitted: level = "READ COMMITTED"
        case .repeatableRead: level = "REPEATABLE READ"
        case .serializable: level = "SERIALIZABLE"
        }
        return "BEGIN ISOLATION LEVEL \(level)" + (readOnly ? " READ ONLY" : " READ WRITE")
    }
}
