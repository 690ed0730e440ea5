import FoundationEssentials
import LocifyRules
import Primitives

// Binary wire formats of the scalar types the backend uses. Integers and floats are big-endian;
// text is UTF-8 without a terminator; uuid is its 16 bytes; timestamptz is int64 microseconds
// since 2000-01-01T00:00:00Z.

extension String: PostgresEncodable, PostgresDecodable, PostgresArrayElement {
    /// Bound as `text`.
    public static var postgresDataType: PostgresDataType { .text }
    /// `[String]` binds as `text[]`.
    public static var postgresArrayDataType: PostgresDataType { .textArray }
    /// `[String]` decodes from `text[]`, `varchar[]`, `bpchar[]` and `name[]`.
    public static func acceptsPostgresArrayType(_ type: PostgresDataType) -> Bool {
        type == .textArray || type == .varcharArray || type == .bpcharArray || type == PostgresDataType(rawValue: 1003)
    }

    /// Appends the UTF-8 bytes.
    public func encode(into buffer: inout [UInt8]) {
        buffer.append(contentsOf: utf8)
    }

    /// `text`, `varchar`, `bpchar`, `name`, `unknown`, `json` and `jsonb`.
    public static func acceptsPostgresType(_ type: PostgresDataType) -> Bool {
        type.isTextLike || type == .json || type == .jsonb
    }

    /// Decodes UTF-8 text (jsonb's binary form has a version byte in front).
    public init(postgresBinary bytes: UnsafeRawBufferPointer, type: PostgresDataType) throws(PostgresError) {
        if type == .jsonb {
            guard let version = bytes.first, version == 1 else {
                throw .decoding("unsupported jsonb binary version")
            }
            self = String(decoding: UnsafeRawBufferPointer(rebasing: bytes.dropFirst()), as: UTF8.self)
        } else {
            self = String(decoding: bytes, as: UTF8.self)
        }
    }
}

extension Int64: PostgresEncodable, PostgresDecodable, PostgresArrayElement {
    /// Bound as `int8`.
    public static var postgresDataType: PostgresDataType { .int8 }
    /// `[Int64]` binds as `int8[]`.
    public static var postgresArrayDataType: PostgresDataType { .int8Array }

    /// Appends 8 big-endian bytes.
    public func encode(into buffer: inout [UInt8]) {
        buffer.appendBigEndian(self)
    }

    /// `int2`, `int4` and `int8`.
    public static func acceptsPostgresType(_ type: PostgresDataType) -> Bool {
        type == .int8 || type == .int4 || type == .int2
    }

    /// Widens any accepted integer width.
    public init(postgresBinary bytes: UnsafeRawBufferPointer, type: PostgresDataType) throws(PostgresError) {
        var reader = PostgresBinaryReader(bytes)
        switch type {
        case .int2:
            try expectLength(bytes, 2, type)
            self = Int64(try reader.readInteger(as: Int16.self))
        case .int4:
            try expectLength(bytes, 4, type)
            self = Int64(try reader.readInteger(as: Int32.self))
        default:
            try expectLength(bytes, 8, type)
            self = try reader.readInteger(as: Int64.self)
        }
    }
}

extension Int: PostgresEncodable, PostgresDecodable, PostgresArrayElement {
    /// Bound as `int8`.
    public static var postgresDataType: PostgresDataType { .int8 }
    /// `[Int]` binds as `int8[]`.
    public static var postgresArrayDataType: PostgresDataType { .int8Array }

    /// Appends 8 big-endian bytes.
    public func encode(into buffer: inout [UInt8]) {
        buffer.appendBigEndian(Int64(self))
    }

    /// `int2`, `int4` and `int8`.
    public static func acceptsPostgresType(_ type: PostgresDataType) -> Bool {
        Int64.acceptsPostgresType(type)
    }

    /// Widens any accepted integer width.
    public init(postgresBinary bytes: UnsafeRawBufferPointer, type: PostgresDataType) throws(PostgresError) {
        let value = try Int64(postgresBinary: bytes, type: type)
        guard let exact = Int(exactly: value) else {
            throw .decoding("integer \(value) does not fit in Int")
        }
        self = exact
    }
}

extension Int32: PostgresEncodable, PostgresDecodable, PostgresArrayElement {
    /// Bound as `int4`.
    public static var postgresDataType: PostgresDataType { .int4 }
    /// `[Int32]` binds as `int4[]`.
    public static var postgresArrayDataType: PostgresDataType { .int4Array }

    /// Appends 4 big-endian bytes.
    public func encode(into buffer: inout [UInt8]) {
        buffer.appendBigEndian(self)
    }

    /// `int2` and `int4` (an `int8` column needs `Int` or `Int64`).
    public static func acceptsPostgresType(_ type: PostgresDataType) -> Bool {
        type == .int4 || type == .int2
    }

    /// Widens `int2`.
    public init(postgresBinary bytes: UnsafeRawBufferPointer, type: PostgresDataType) throws(PostgresError) {
        var reader = PostgresBinaryReader(bytes)
        if type == .int2 {
            try expectLength(bytes, 2, type)
            self = Int32(try reader.readInteger(as: Int16.self))
        } else {
            try expectLength(bytes, 4, type)
            self = try reader.readInteger(as: Int32.self)
        }
    }
}

extension Bool: PostgresEncodable, PostgresDecodable {
    /// Bound as `bool`.
    public static var postgresDataType: PostgresDataType { .bool }

    /// Appends one byte, 1 or 0.
    public func encode(into buffer: inout [UInt8]) {
        buffer.append(self ? 1 : 0)
    }

    /// `bool` only.
    public static func acceptsPostgresType(_ type: PostgresDataType) -> Bool {
        type == .bool
    }

    /// One byte, non-zero is true.
    public init(postgresBinary bytes: UnsafeRawBufferPointer, type: PostgresDataType) throws(PostgresError) {
        try expectLength(bytes, 1, type)
        self = bytes[0] != 0
    }
}

extension Double: PostgresEncodable, PostgresDecodable {
    /// Bound as `float8`.
    public static var postgresDataType: PostgresDataType { .float8 }

    /// Appends the IEEE 754 bit pattern, big-endian.
    public func encode(into buffer: inout [UInt8]) {
        buffer.appendBigEndian(bitPattern)
    }

    /// `float8` and `float4`.
    public static func acceptsPostgresType(_ type: PostgresDataType) -> Bool {
        type == .float8 || type == .float4
    }

    /// Widens `float4`.
    public init(postgresBinary bytes: UnsafeRawBufferPointer, type: PostgresDataType) throws(PostgresError) {
        var reader = PostgresBinaryReader(bytes)
        if type == .float4 {
            try expectLength(bytes, 4, type)
            self = Double(Float(bitPattern: try reader.readInteger(as: UInt32.self)))
        } else {
            try expectLength(bytes, 8, type)
            self = Double(bitPattern: try reader.readInteger(as: UInt64.self))
        }
    }
}

extension UUID: PostgresEncodable, PostgresDecodable, PostgresArrayElement {
    /// Bound as `uuid`.
    public static var postgresDataType: PostgresDataType { .uuid }
    /// `[UUID]` binds as `uuid[]`.
    public static var postgresArrayDataType: PostgresDataType { .uuidArray }

    /// Appends the 16 bytes.
    public func encode(into buffer: inout [UInt8]) {
        withUnsafeBytes(of: uuid) { buffer.append(contentsOf: $0) }
    }

    /// `uuid` only.
    public static func acceptsPostgresType(_ type: PostgresDataType) -> Bool {
        type == .uuid
    }

    /// Reads the 16 bytes.
    public init(postgresBinary bytes: UnsafeRawBufferPointer, type: PostgresDataType) throws(PostgresError) {
        try expectLength(bytes, 16, type)
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &value) { $0.copyMemory(from: bytes) }
        self = UUID(uuid: value)
    }
}

extension Date: PostgresEncodable, PostgresDecodable {
    /// Bound as `timestamptz`.
    public static var postgresDataType: PostgresDataType { .timestamptz }

    /// Appends int64 microseconds since 2000-01-01 (rounded to the microsecond), big-endian.
    public func encode(into buffer: inout [UInt8]) {
        let seconds = timeIntervalSince1970 - Double(Timestamp.postgresEpochOffsetMilliseconds / 1000)
        buffer.appendBigEndian(Int64(saturating: (seconds * 1_000_000).rounded()))
    }

    /// `timestamptz`, and `timestamp` read as UTC.
    public static func acceptsPostgresType(_ type: PostgresDataType) -> Bool {
        Timestamp.acceptsPostgresType(type)
    }

    /// Truncated to the millisecond, like `Timestamp`.
    public init(postgresBinary bytes: UnsafeRawBufferPointer, type: PostgresDataType) throws(PostgresError) {
        let timestamp = try Timestamp(postgresBinary: bytes, type: type)
        self.init(timeIntervalSince1970: Double(timestamp.milliseconds) / 1000)
    }
}

extension Int64 {
    /// The integral part of `value`, clamped to Int64's range (NaN becomes 0).
    init(saturating value: Double) {
        if value.isNaN {
            self = 0
        } else if value >= 0x1p63 {
            self = .max
        } else if value <= -0x1p63 {
            self = .min
        } else {
            self = Int64(value)
        }
    }
}
