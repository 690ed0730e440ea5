import Synchronization

/// `X-Request-Id` (openapi.yaml): a client's id is echoed when it is 1-128 characters of
/// `[A-Za-z0-9._:-]`; otherwise a new one is made from a per-process random prefix and a counter.
enum RequestID {
    private static let prefix = String(UInt32.random(in: 0...UInt32.max), radix: 16)
    private static let counter = Atomic<UInt64>(0)

    static func forRequest(clientValue: String?) -> String {
        if let clientValue, isSane(clientValue) { return clientValue }
        let next = counter.wrappingAdd(1, ordering: .relaxed).newValue
        return prefix + "-" + String(next, radix: 16)
    }

    static func isSane(_ value: String) -> Bool {
        let utf8 = value.utf8
        return !utf8.isEmpty && utf8.count <= 128
            && utf8.allSatisfy { c in
                (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)
                    || c == UInt8(ascii: ".") || c == UInt8(ascii: "_") || c == UInt8(ascii: ":") || c == UInt8(ascii: "-")
            }
    }
}
