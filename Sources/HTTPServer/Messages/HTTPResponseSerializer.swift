/// Turns an `HTTPResponse` into wire bytes: the status line and header fields serialized into one
/// buffer, with `Content-Length`, `Date` and `Connection` added by the server.
enum HTTPResponseSerializer {
    /// What the `Connection` header says.
    enum ConnectionDirective {
        /// HTTP/1.1 default: no header.
        case persistentDefault
        /// `Connection: keep-alive` (an HTTP/1.0 client that asked for it).
        case keepAlive
        /// `Connection: close`: the server closes after this response.
        case close
    }

    /// Bodies up to this size are copied after the head so one buffer holds the whole response.
    static let inlineBodyLimit = 16 * 1024

    static let continueResponse: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    /// The bytes of `response`: one buffer, or the head and the (large) body as two.
    ///
    /// `Content-Length` is the body's size; for a response to HEAD the body is dropped and a
    /// `Content-Length` set by the application is kept (else the body's size is announced). 1xx
    /// and 204 get no `Content-Length` and no body (RFC 9110 8.6); 304 keeps only an application's.
    /// `Transfer-Encoding` and `Connection` set by the application are replaced. Fields with an
    /// invalid name or a value holding CR, LF, NUL or other controls are dropped, so a value can
    /// never split the response.
    static func serialize(
        _ response: HTTPResponse, isResponseToHead: Bool, connection: ConnectionDirective, dateLine: [UInt8]
    ) -> [[UInt8]] {
        let status = response.status
        let sendsBody = !isResponseToHead && !status.forbidsContent && !response.body.isEmpty
        let inlineBody = sendsBody && response.body.count <= inlineBodyLimit
        var head: [UInt8] = []
        head.reserveCapacity(160 + response.headers.count * 48 + (inlineBody ? response.body.count : 0))

        append("HTTP/1.1 ", to: &head)
        let code = min(max(status.code, 100), 999)
        head.append(UInt8(ascii: "0") + UInt8(code / 100))
        head.append(UInt8(ascii: "0") + UInt8(code / 10 % 10))
        head.append(UInt8(ascii: "0") + UInt8(code % 10))
        head.append(UInt8(ascii: " "))
        for byte in status.reasonPhrase.utf8 where HTTPText.isFieldValueByte(byte) {
            head.append(byte)
        }
        append("\r\n", to: &head)

        var applicationContentLength = false
        var applicationDate = false
        for field in response.headers {
            if HTTPText.equalsIgnoringASCIICase(field.name, "Content-Length") {
                guard isResponseToHead || status.code == 304, !(100..<200).contains(status.code), status.code != 204
                else { continue }
                applicationContentLength = true
            } else if HTTPText.equalsIgnoringASCIICase(field.name, "Transfer-Encoding")
                || HTTPText.equalsIgnoringASCIICase(field.name, "Connection")
            {
                continue
            } else if HTTPText.equalsIgnoringASCIICase(field.name, "Date") {
                applicationDate = true
            }
            guard isValidField(name: field.name, value: field.value) else { continue }
            head.append(contentsOf: field.name.utf8)
            append(": ", to: &head)
            head.append(contentsOf: field.value.utf8)
            append("\r\n", to: &head)
        }
        if !status.forbidsContent && !applicationContentLength {
            append("Content-Length: ", to: &head)
            appendDecimal(response.body.count, to: &head)
            append("\r\n", to: &head)
        }
        if !applicationDate {
            head.append(contentsOf: dateLine)
        }
        switch connection {
        case .persistentDefault: break
        case .keepAlive: append("Connection: keep-alive\r\n", to: &head)
        case .close: append("Connection: close\r\n", to: &head)
        }
        append("\r\n", to: &head)
        if inlineBody {
            head.append(contentsOf: response.body)
            return [head]
        }
        return sendsBody ? [head, response.body] : [head]
    }

    private static func isValidField(name: String, value: String) -> Bool {
        guard !name.isEmpty else { return false }
        for byte in name.utf8 where !HTTPText.isTokenByte(byte) { return false }
        for byte in value.utf8 where !HTTPText.isFieldValueByte(byte) { return false }
        return true
    }

    @inline(__always)
    private static func append(_ text: StaticString, to buffer: inout [UInt8]) {
        buffer.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Stack room for the decimal digits of any `Int` (at most 19), so writing one allocates nothing.
    private typealias DecimalDigits = (
        UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8
    )

    private static func appendDecimal(_ value: Int, to buffer: inout [UInt8]) {
        if value == 0 {
            buffer.append(UInt8(ascii: "0"))
            return
        }
        var digits: DecimalDigits = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        var remaining = value
        withUnsafeMutableBytes(of: &digits) { storage in
            while remaining > 0 && count < storage.count {
                storage[count] = UInt8(ascii: "0") + UInt8(remaining % 10)
                remaining /= 10
                count += 1
            }
            for index in stride(from: count - 1, through: 0, by: -1) {
                buffer.append(storage[index])
            }
        }
    }
}
