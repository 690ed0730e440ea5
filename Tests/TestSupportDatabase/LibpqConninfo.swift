import CLibPQ

/// libpq's own reading of a connection string (`PQconninfoParse`), the truth that the redaction
/// tests hold `PostgresConfiguration` to.
public enum LibpqConninfo {
    /// The keywords libpq sets from `connectionString` with their values, or libpq's error message.
    public static func parse(_ connectionString: String) -> Result<[String: String], LibpqParseError> {
        var errorMessage: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(connectionString, &errorMessage) else {
            defer { PQfreemem(errorMessage) }
            return .failure(LibpqParseError(message: errorMessage.map { String(cString: $0) } ?? "out of memory"))
        }
        defer { PQconninfoFree(options) }
        var values: [String: String] = [:]
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val {
                values[String(cString: keyword)] = String(cString: value)
            }
            option = option.successor()
        }
        return .success(values)
    }
}

/// libpq refused a connection string; `message` is its reason.
public struct LibpqParseError: Error, Equatable {
    /// libpq's reason.
    public var message: String
}
