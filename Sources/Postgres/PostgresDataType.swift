/// A PostgreSQL type OID, as sent with a bind and reported for a result column.
///
/// The set of types can grow, so this is a struct with static constants rather than an enum.
public struct PostgresDataType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The type's OID in `pg_type`.
    public var rawValue: UInt32

    /// Wraps a raw OID.
    public init(rawValue: UInt32) {
        self.rawValue = rawValue
    }

    /// `bool`.
    public static let bool = PostgresDataType(rawValue: 16)
    /// `bytea`.
    public static let bytea = PostgresDataType(rawValue: 17)
    /// `name` (63-byte identifiers, e.g. from the catalogs).
    public static let name = PostgresDataType(rawValue: 19)
    /// `int8` / `bigint`.
    public static let int8 = PostgresDataType(rawValue: 20)
    /// `int2` / `smallint`.
    public static let int2 = PostgresDataType(rawValue: 21)
    /// `int4` / `integer`.
    public static let int4 = PostgresDataType(rawValue: 23)
    /// `text`.
    public static let text = PostgresDataType(rawValue: 25)
    /// `oid`.
    public static let oid = PostgresDataType(rawValue: 26)
    /// `json`.
    public static let json = PostgresDataType(rawValue: 114)
    /// `float4` / `real`.
    public static let float4 = PostgresDataType(rawValue: 700)
    /// `float8` / `double precision`.
    public static let float8 = PostgresDataType(rawValue: 701)
    /// `unknown` (untyped literals).
    public static let unknown = PostgresDataType(rawValue: 705)
    /// `int4[]`.
    public static let int4Array = PostgresDataType(rawValue: 1007)
    /// `text[]`.
    public static let textArray = PostgresDataType(rawValue: 1009)
    /// `bpchar[]`.
    public static let bpcharArray = PostgresDataType(rawValue: 1014)
    /// `varchar[]`.
    public static let varcharArray = PostgresDataType(rawValue: 1015)
    /// `int8[]`.
    public static let int8Array = PostgresDataType(rawValue: 1016)
    /// `bpchar` / `char(n)`.
    public static let bpchar = PostgresDataType(rawValue: 1042)
    /// `varchar`.
    public static let varchar = PostgresDataType(rawValue: 1043)
    /// `date`.
    public static let date = PostgresDataType(rawValue: 1082)
    /// `timestamp` (without time zone).
    public static let timestamp = PostgresDataType(rawValue: 1114)
    /// `timestamptz`.
    public static let timestamptz = PostgresDataType(rawValue: 1184)
    /// `numeric`.
    public static let numeric = PostgresDataType(rawValue: 1700)
    /// `uuid`.
    public static let uuid = PostgresDataType(rawValue: 2950)
    /// `uuid[]`.
    public static let uuidArray = PostgresDataType(rawValue: 2951)
    /// `jsonb`.
    public static let jsonb = PostgresDataType(rawValue: 3802)

    /// The SQL name of the well-known types, the OID otherwise.
    public var description: String {
        switch self {
        case .bool: return "bool"
        case .bytea: return "bytea"
        case .name: return "name"
        case .int8: return "int8"
        case .int2: return "int2"
        case .int4: return "int4"
        case .text: return "text"
        case .oid: return "oid"
        case .json: return "json"
        case .float4: return "float4"
        case .float8: return "float8"
        case .unknown: return "unknown"
        case .int4Array: return "int4[]"
        case .textArray: return "text[]"
        case .bpcharArray: return "bpchar[]"
        case .varcharArray: return "varchar[]"
        case .int8Array: return "int8[]"
        case .bpchar: return "bpchar"
        case .varchar: return "varchar"
        case .date: return "date"
        case .timestamp: return "timestamp"
        case .timestamptz: return "timestamptz"
        case .numeric: return "numeric"
        case .uuid: return "uuid"
        case .uuidArray: return "uuid[]"
        case .jsonb: return "jsonb"
        default: return "oid \(rawValue)"
        }
    }

    /// True for the types whose binary form is plain UTF-8 text.
    var isTextLike: Bool {
        self == .text || self == .varchar || self == .name || self == .bpchar || self == .unknown
    }
}
