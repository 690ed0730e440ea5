import Primitives

/// Reads one HTTP/1.1 response from a `TransportStream` (RFC 9112): the status line and header
/// fields (in order, at most `headLimit` bytes), interim 1xx responses skipped, and the body framed
/// by chunked transfer coding, Content-Length or the end of the connection (at most `bodyLimit`).
/// Anything malformed or too large is a `TransportError`.
struct HTTPResponseReader {
    /// The most bytes a response head (status line and fields) may take: 64 KiB.
    static let headLimit = 64 * 1024
    /// The most bytes a body may take: 16 MiB (Google's answers are a few KiB).
    static let bodyLimit = 16 * 1024 * 1024

    private let stream: any TransportStream
    private var buffer: [UInt8] = []
    /// Where the unread bytes of `buffer` start.
    private var position = 0

    init(stream: any TransportStream) {
        self.stream = stream
    }

    /// Reads the final response to a request made with `method`.
    mutating func readResponse(method: String) throws(TransportError) -> TransportResponse {
        var (status, reason, headers) = try readHead()
        // RFC 9110 section 15.2: interim responses precede the final one; 101 would switch protocols.
        while (100..<200).contains(status) {
            guard status != 101 else { throw TransportError("unexpected 101 Switching Protocols") }
            (status, reason, headers) = try readHead()
        }
        // RFC 9112 section 6.3: framing, in order of precedence.
        if method == "HEAD" || status == 204 || status == 304 {
            return TransportResponse(status: status, reason: reason, headers: headers)
        }
        let transferCodings = headers.filter { $0.0.lowercased() == "transfer-encoding" }
            .flatMap { $0.1.split(separator: ",") }
            .map { $0.trimmingSpaces().lowercased() }
        if !transferCodings.isEmpty {
            let body = transferCodings.last == "chunked" ? try readChunkedBody() : try readUntilClose()
            return TransportResponse(status: status, reason: reason, headers: headers, body: body)
        }
        let lengths = headers.filter { $0.0.lowercased() == "content-length" }.flatMap { $0.1.split(separator: ",", omittingEmptySubsequences: false) }
            .map { $0.trimmingSpaces() }
        if let first = lengths.first {
            guard lengths.allSatisfy({ $0 == first }), !first.isEmpty, first.count <= 18, first.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                let length = Int(first)
            else { throw TransportError("invalid Content-Length") }
            guard length <= Self.bodyLimit else { throw TransportError("response body larger than \(Self.bodyLimit) bytes") }
            return TransportResponse(status: status, reason: reason, headers: headers, body: try readExactly(length))
        }
        return TransportResponse(status: status, reason: reason, headers: headers, body: try readUntilClose())
    }

    /// The status code, reason phrase and header fields of one response.
    private mutating func readHead() throws(TransportError) -> (Int, String, [(String, String)]) {
        var budget = Self.headLimit
        let statusLine = try readLine(budget: &budget)
        // RFC 9112 section 4: HTTP-version SP 3DIGIT SP [reason-phrase].
        let prefix = Array("HTTP/1.".utf8)
        guard statusLine.count >= 12, Array(statusLine[0..<7]) == prefix, statusLine[7] >= 0x30, statusLine[7] <= 0x39,
            statusLine[8] == 0x20, statusLine[9...11].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            statusLine.count == 12 || statusLine[12] == 0x20
        else { throw TransportError("invalid status line") }
        let status = statusLine[9...11].reduce(0) { $0 * 10 + Int($1 - 0x30) }
        let reason = statusLine.count > 13 ? String(decoding: statusLine[(statusLine.startIndex + 13)...], as: UTF8.self) : ""
        let headers = try readFields(budget: &budget)
        return (status, reason, headers)
    }

    /// Field lines up to the empty line (the head's or, after a chunked body, the trailer's).
    private mutating func readFields(budget: inout Int) throws(TransportError) -> [(String, String)] {
        var fields: [(String, String)] = []
        while true {
            let line = try readLine(budget: &budget)
            if line.isEmpty { return fields }
            // RFC 9112 section 5: field-name ":" OWS field-value OWS; obsolete line folding refused.
            guard let colon = line.firstIndex(of: 0x3A), colon > 0, line[0] != 0x20, line[0] != 0x09,
                !line[..<colon].contains(where: { $0 == 0x20 || $0 == 0x09 })
            else { throw TransportError("invalid header field") }
            let name = String(decoding: line[..<colon], as: UTF8.self)
            let value = String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingSpaces()
            fields.append((name, value))
        }
    }

    /// A chunked body (RFC 9112 section 7.1): chunk extensions ignored, trailer fields read and dropped.
    private mutating func readChunkedBody() throws(TransportError) -> [UInt8] {
        var body: [UInt8] = []
        while true {
            var budget = Self.headLimit
            let line = try readLine(budget: &budget)
            let digits = line.prefix { $0 != 0x3B && $0 != 0x20 && $0 != 0x09 }
            guard !digits.isEmpty, digits.count <= 8 else { throw TransportError("invalid chunk size") }
            var size = 0
            for digit in digits {
                guard let value = HexDigit.value(digit) else { throw TransportError("invalid chunk size") }
                size = size * 16 + Int(value)
            }
            if size == 0 { break }
            guard body.count + size <= Self.bodyLimit else { throw TransportError("response body larger than \(Self.bodyLimit) bytes") }
            body += try readExactly(size)
            var endBudget = 2
            guard try readLine(budget: &endBudget).isEmpty else { throw TransportError("invalid chunk end") }
        }
        var trailerBudget = Self.headLimit
        _ = try readFields(budget: &trailerBudget)
        return body
    }

    /// Everything until the server closes the connection.
    private mutating func readUntilClose() throws(TransportError) -> [UInt8] {
        while try fill() {
            guard buffer.count - position <= Self.bodyLimit else { throw TransportError("response body larger than \(Self.bodyLimit) bytes") }
        }
        return Array(buffer[position...])
    }

    /// The next `count` bytes.
    private mutating func readExactly(_ count: Int) throws(TransportError) -> [UInt8] {
        while buffer.count - position < count {
            guard try fill() else { throw TransportError("connection closed before the response body was complete") }
        }
        let bytes = Array(buffer[position..<(position + count)])
        position += count
        return bytes
    }

    /// The next line without its CRLF (or bare LF), charged to `budget`.
    private mutating func readLine(budget: inout Int) throws(TransportError) -> ArraySlice<UInt8> {
        var scanned = 0
        while true {
            if let newline = buffer[(position + scanned)...].firstIndex(of: 0x0A) {
                let length = newline + 1 - position
                guard length <= budget else { throw TransportError("response head larger than \(Self.headLimit) bytes") }
                budget -= length
                var end = newline
                if end > position && buffer[end - 1] == 0x0D { end -= 1 }
                let line = buffer[position..<end]
                position = newline + 1
                return ArraySlice(line)
            }
            guard buffer.count - position <= budget else { throw TransportError("response head larger than \(Self.headLimit) bytes") }
            scanned = buffer.count - position
            guard try fill() else { throw TransportError("connection closed before the response was complete") }
        }
    }

    /// Reads more bytes into `buffer`, first dropping the consumed ones; false at the end of the stream.
    private mutating func fill() throws(TransportError) -> Bool {
        if position > 0 && position >= buffer.count / 2 {
            buffer.removeFirst(position)
            position = 0
        }
        return try stream.read(into: &buffer)
    }
}
