/// Reads big-endian values from a binary result cell, failing with a decoding error when short.
struct PostgresBinaryReader {
    private let bytes: UnsafeRawBufferPointer
    private(set) var offset = 0

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    var remainingCount: Int { bytes.count - offset }

    mutating func readInteger<Value: FixedWidthInteger>(as type: Value.Type = Value.self) throws(PostgresError) -> Value {
        let size = MemoryLayout<Value>.size
        guard remainingCount >= size else {
            throw .decoding("binary value is truncated")
        }
        let value = bytes.loadUnaligned(fromByteOffset: offset, as: Value.self)
        offset += size
        return Value(bigEndian: value)
    }

    mutating func readBytes(count: Int) throws(PostgresError) -> UnsafeRawBufferPointer {
        guard count >= 0, remainingCount >= count else {
            throw .decoding("binary value is truncated")
        }
        let slice = UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)])
        offset += count
        return slice
    }
}

/// Checks that a fixed-size binary value has exactly the expected length.
func expectLength(_ bytes: UnsafeRawBufferPointer, _ count: Int, _ type: PostgresDataType) throws(PostgresError) {
    guard bytes.count == count else {
        throw .decoding("\(type) value has \(bytes.count) bytes, expected \(count)")
    }
}
