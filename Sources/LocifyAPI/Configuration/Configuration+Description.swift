import Postgres

extension Configuration: CustomStringConvertible, CustomDebugStringConvertible {
    /// The settings for logs and error reports, with `DATABASE_URL`'s password as `***` and the
    /// service-account key only by path, so printing a configuration never leaks a secret.
    public var description: String {
        var redacted = self
        redacted.databaseURL = PostgresConfiguration.redacted(databaseURL)
        return "Configuration("
            + Mirror(reflecting: redacted).children.map { "\($0.label ?? "?"): \($0.value)" }.joined(separator: ", ") + ")"
    }

    /// The same redacted text as `description`, so `debugPrint` and `\(debug:)` leak nothing either.
    public var debugDescription: String { description }
}
