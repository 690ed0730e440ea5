// One-dimensional arrays in PostgreSQL's binary array format:
//   int32 ndim, int32 flags (1 = has NULLs), uint32 element OID,
//   per dimension: int32 length, int32 lower bound (1),
//   per element: int32 byte length (-1 = NULL), then the element's binary bytes.
// An empty array has ndim 0 and nothing after the element OID.

extension Array: PostgresEncodable where Element: PostgresEncodable & PostgresArrayElement {
    /// The element type's array type, e.g. `text[]` for `[String]`.
    public static var postgresDataType: PostgresDataType { Element.postgresArrayDataType }

    /// Appends the binary array header and every element.
    public func encode(into buffer: inout [UInt8]) {
        buffer.appendBigEndian(Int32(isEmpty ? 0 : 1))
        buffer.appendBigEndian(Int32(0))
        buffer.appendBigEndian(Element.postgresDataType.rawValue)
        guard !isEmpty else { return }
        buffer.appendBigEndian(Int32(clamping: count))
        buffer.appendBigEndian(Int32(1))
        for element in self {
            let lengthOffset = buffer.count
            buffer.appendBigEndian(Int32(0))
            element.encode(into: &buffer)
            let length = Int32(clamping: buffer.count - lengthOffset - 4)
            Swift.withUnsafeBytes(of: length.bigEndian) { lengthBytes in
                buffer.replaceSubrange(lengthOffset..<(lengthOffset + 4), with: lengthBytes)
            }
        }
    }
}

extension Array: PostgresDecodable where Element: PostgresDecodable & PostgresArrayElement {
    /// The element type's accepted array types.
    public static func acceptsPostgresType(_ type: PostgresDataType) -> Bool {
        Element.acceptsPostgresArrayType(type)
    }

    /// Decodes a one-dimensional array (or an empty one); multi-dimensional arrays and NULL
    /// elements (unless `Element` is optional) are decoding errors.
    public init(postgresBinary bytes: UnsafeRawBufferPointer, type: PostgresDataType) throws(PostgresError) {
        var reader = PostgresBinaryReader(bytes)
        let dimensions = try reader.readInteger(as: Int32.self)
        _ = try reader.readInteger(as: Int32.self)  // has-NULLs flag: NULLs are checked per element
        let elementType = PostgresDataType(rawValue: try reader.readInteger(as: UInt32.self))
        guard Element.acceptsPostgresType(elementType) else {
            throw .decoding("array of \(elementType) cannot be decoded as [\(Element.self)]")
        }
        if dimensions == 0 {
            self = []
            return
        }
        guard dimensions == 1 else {
            throw .decoding("array has \(dimensions) dimensions, only one is supported")
        }
        let count = try reader.readInteger(as: Int32.self)
        _ = try reader.readInteger(as: Int32.self)  // lower bound
        guard count >= 0, Int(count) <= reader.remainingCount / 4 else {
            throw .decoding("array length \(count) is invalid")
        }
        var elements: [Element] = []
        elements.reserveCapacity(Int(count))
        for _ in 0..<count {
            let length = try reader.readInteger(as: Int32.self)
            if length < 0 {
                guard let null = Element.postgresNullValue else {
                    throw .decoding("array holds a NULL element but \(Element.self) is not optional")
                }
                elements.append(null)
            } else {
                let elementBytes = try reader.readBytes(count: Int(length))
                elements.append(try Element(postgresBinary: elementBytes, type: elementType))
            }
        }
        self = elements
    }
}

extension Optional: PostgresArrayElement where Wrapped: PostgresArrayElement {
    /// The wrapped type's array type, so `[String?]` decodes arrays holding NULLs.
    public static var postgresArrayDataType: PostgresDataType { Wrapped.postgresArrayDataType }
    /// The wrapped type's accepted array types.
    public static func acceptsPostgresArrayType(_ type: PostgresDataType) -> Bool { Wrapped.acceptsPostgresArrayType(type) }
}
