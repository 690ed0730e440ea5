import Glibc
import Primitives

/// An incremental HTTP/1.1 request parser (RFC 9112): a pure state machine over bytes, no I/O.
///
/// Feed it bytes as they arrive; each call reports that it needs more input, that the client
/// waits for `100 Continue`, a complete request (with the bytes it consumed, so pipelined input
/// can be fed again), or an error naming the status to answer. It is strict where leniency has
/// been the root of request smuggling: line ends are CRLF only, obsolete line folding is refused,
/// `Content-Length` and `Transfer-Encoding` together are refused. Every limit is checked while
/// bytes arrive, so nothing is buffered past a limit.
public struct HTTPRequestParser: Sendable {
    /// The limits the parser enforces (see `HTTPServerConfiguration` for their meaning).
    public struct Limits: Sendable, Equatable {
        /// Longest request line, CRLF excluded (414).
        public var maxRequestLineBytes: Int
        /// Largest header section, field lines without CRLF, trailers included (431).
        public var maxHeaderBytes: Int
        /// Most field lines, trailers included (431).
        public var maxHeaderCount: Int
        /// Largest body, inclusive (413).
        public var maxBodyBytes: Int
        /// Most chunk-extension bytes per request (400).
        public var maxChunkExtensionBytes: Int
        /// Most empty lines ignored before the request line (400).
        public var maxLeadingEmptyLines: Int

        /// Limits taken from a server configuration.
        public init(configuration: HTTPServerConfiguration = HTTPServerConfiguration()) {
            maxRequestLineBytes = configuration.maxRequestLineBytes
            maxHeaderBytes = configuration.maxHeaderBytes
            maxHeaderCount = configuration.maxHeaderCount
            maxBodyBytes = configuration.maxBodyBytes
            maxChunkExtensionBytes = configuration.maxChunkExtensionBytes
            maxLeadingEmptyLines = configuration.maxLeadingEmptyLines
        }
    }

    /// What a call to `parse` produced.
    public enum Step: Sendable, Equatable {
        /// Every byte was consumed; the request is not complete yet.
        case needMore
        /// The header section asked for `Expect: 100-continue` and a body is pending. `consumed`
        /// bytes were used; feed the rest (if any) again. The I/O layer answers `100 Continue`.
        /// Never reported by a parser that pauses after heads (it reports `head` instead).
        case continueNeeded(consumed: Int)
        /// Only from a parser made with `pausesAfterHead`: the header section of a request with a
        /// body is complete and none of the body has been parsed. `head` is the request without
        /// its body (empty `body` and `trailers`); `expectsContinue` tells whether the client
        /// waits for `100 Continue`. `consumed` bytes were used; feed the rest (the body) once
        /// the body is admitted.
        case head(HTTPRequest, expectsContinue: Bool, consumed: Int)
        /// A complete request, which used the first `consumed` bytes of the input. The parser is
        /// ready for the next request; feed it the remaining bytes.
        case request(HTTPRequest, consumed: Int)
        /// The input is malformed or over a limit. The parser stays failed; close the connection.
        case error(HTTPRequestError)
    }

    /// Where the parser is, for choosing which timeout applies.
    public enum Phase: Sendable, Equatable {
        /// Between requests: no byte of the next request has arrived.
        case idle
        /// Receiving the request line or header fields, or the empty lines before a request line
        /// (they are part of the next request's head: its header timeout runs).
        case head
        /// Receiving the body (or the trailers of a chunked body).
        case body
    }

    private enum State: Sendable {
        case requestLine
        case headerFields
        case fixedBody(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailerFields
        case failed(HTTPRequestError)
    }

    /// What handling one complete line led to.
    private enum LineOutcome {
        case proceed
        case continueNeeded
        case headComplete
        case complete
        case failed(HTTPRequestError)
    }

    private let limits: Limits
    /// Whether the parser stops after the header section of a request with a body (`Step.head`).
    private let pausesAfterHead: Bool
    private var state: State = .requestLine
    /// The bytes of a line that arrived in pieces (LF not seen yet). Reused between lines.
    private var pendingLine: [UInt8] = []

    // The request being assembled.
    private var method: HTTPMethod = .GET
    private var target = ""
    private var path = ""
    private var query: String?
    private var version: HTTPVersion = .http1_1
    private var headers = HTTPHeaders()
    private var trailers = HTTPHeaders()
    private var body: [UInt8] = []

    // Counters and framing facts of the request being assembled.
    private var leadingEmptyLines = 0
    private var headerBytes = 0
    private var fieldCount = 0
    private var chunkExtensionBytes = 0
    private var hostCount = 0
    private var contentLength: Int?
    private var sawTransferEncoding = false
    private var chunkedCodings = 0
    private var otherCodings = 0
    private var expectsContinue = false

    /// A parser enforcing `limits`. With `pausesAfterHead`, it reports the head of every request
    /// with a body (`Step.head`) before parsing any of the body, so the server can decide about the
    /// body (admit or refuse it) from the head alone.
    public init(limits: Limits = Limits(), pausesAfterHead: Bool = false) {
        self.limits = limits
        self.pausesAfterHead = pausesAfterHead
        pendingLine.reserveCapacity(256)
        headers.fields.reserveCapacity(12)
    }

    /// Which part of a request the parser is receiving.
    public var phase: Phase {
        switch state {
        case .requestLine: return pendingLine.isEmpty && leadingEmptyLines == 0 ? .idle : .head
        case .headerFields: return .head
        case .failed: return .idle
        case .fixedBody, .chunkSize, .chunkData, .chunkDataEnd, .trailerFields: return .body
        }
    }

    /// The `Content-Length` of the request whose body is being received (phase `.body`); nil for
    /// a chunked body (its size is unknown until its last chunk) and outside a body. The server
    /// knows from it whether the body arrived whole with its head.
    public var bodyContentLength: Int? {
        guard case .fixedBody = state else { return nil }
        return contentLength
    }

    /// What the buffer of the body being received has room for: the memory the body holds, which
    /// the server charges to its body budget.
    var bodyCapacity: Int { body.capacity }

    /// The capacity the body's buffer grows to before `parse` takes `count` more bytes of input,
    /// nil when it has room: twice its capacity, or what those bytes need when more, and never
    /// past the announced `Content-Length` (the buffer of a body of known length ends exact) or
    /// the body limit. Its growth follows what arrives, doubling so that a trickle is not copied
    /// over and over; the bytes of a chunked body's framing are counted as if they were data.
    func bodyCapacity(toTake count: Int) -> Int? {
        let needed: Int
        let limit: Int
        switch state {
        case .fixedBody(let remaining):
            needed = body.count + min(count, remaining)
            limit = body.count + remaining
        case .chunkSize, .chunkData, .chunkDataEnd:
            needed = min(body.count + count, limits.maxBodyBytes)
            limit = limits.maxBodyBytes
        case .requestLine, .headerFields, .trailerFields, .failed:
            return nil
        }
        guard needed > body.capacity else { return nil }
        return min(limit, max(needed, 2 * body.capacity))
    }

    /// Grows the body's buffer to `capacity` (`bodyCapacity(toTake:)`), which the server has
    /// charged to its body budget first.
    mutating func reserveBodyCapacity(_ capacity: Int) {
        body.reserveCapacity(capacity)
    }

    /// Frees the buffer of the body being received: the server gave up on it (it answers it and
    /// closes), or it has not started.
    mutating func discardBody() {
        body = []
    }

    /// Makes room for `count` more body bytes, when the server has not (a parser used alone).
    private mutating func growBody(toTake count: Int) {
        if let capacity = bodyCapacity(toTake: count) { body.reserveCapacity(capacity) }
    }

    /// Parses `input`, continuing where the previous call stopped.
    public mutating func parse(_ input: UnsafeRawBufferPointer) -> Step {
        var index = 0
        while true {
            switch state {
            case .failed(let error):
                return .error(error)

            case .fixedBody(let remaining):
                // RFC 9112 6.2: exactly Content-Length octets of content.
                let available = input.count - index
                if available == 0 { return .needMore }
                let taken = min(available, remaining)
                growBody(toTake: taken)
                body.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[index..<(index + taken)]))
                index += taken
                if taken == remaining {
                    return completeRequest(consumed: index)
                }
                state = .fixedBody(remaining: remaining - taken)

            case .chunkData(let remaining):
                // RFC 9112 7.1: chunk-data is chunk-size octets, followed by CRLF.
                let available = input.count - index
                if available == 0 { return .needMore }
                let taken = min(available, remaining)
                growBody(toTake: taken)
                body.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[index..<(index + taken)]))
                index += taken
                state = taken == remaining ? .chunkDataEnd : .chunkData(remaining: remaining - taken)

            case .requestLine, .headerFields, .chunkSize, .chunkDataEnd, .trailerFields:
                guard index < input.count, let base = input.baseAddress else { return .needMore }
                let start = index
                guard let found = memchr(base + start, Int32(HTTPText.lf), input.count - start) else {
                    // No LF yet: keep the piece, unless the line already certainly breaks a limit.
                    let pieceCount = input.count - start
                    let endsWithCR = input[input.count - 1] == HTTPText.cr
                    if let error = lineLengthError(contentCount: pendingLine.count + pieceCount - (endsWithCR ? 1 : 0)) {
                        return fail(error)
                    }
                    pendingLine.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[start...]))
                    return .needMore
                }
                let lineFeed = UnsafeRawPointer(found) - UnsafeRawPointer(base)
                index = lineFeed + 1
                let outcome: LineOutcome
                if pendingLine.isEmpty {
                    outcome = handleLine(UnsafeRawBufferPointer(rebasing: input[start..<lineFeed]))
                } else {
                    var line = pendingLine
                    pendingLine = []
                    line.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[start..<lineFeed]))
                    outcome = line.withUnsafeBytes { handleLine($0) }
                    line.removeAll(keepingCapacity: true)
                    pendingLine = line
                }
                switch outcome {
                case .proceed: continue
                case .continueNeeded: return .continueNeeded(consumed: index)
                case .headComplete: return .head(currentHead(), expectsContinue: expectsContinue, consumed: index)
                case .complete: return completeRequest(consumed: index)
                case .failed(let error): return fail(error)
                }
            }
        }
    }

    /// Parses the bytes of `input` (convenience for tests and callers holding an array).
    public mutating func parse(_ input: [UInt8]) -> Step {
        input.withUnsafeBytes { parse($0) }
    }

    // MARK: - Lines

    /// The error a line of `contentCount` bytes (terminator excluded) causes in the current state,
    /// checked both on partial and on complete lines so the answer never depends on how the bytes
    /// were split.
    private func lineLengthError(contentCount: Int) -> HTTPRequestError? {
        switch state {
        case .requestLine:
            if contentCount > limits.maxRequestLineBytes {
                return HTTPRequestError(status: .uriTooLong, reason: "request line longer than the limit")
            }
        case .headerFields, .trailerFields:
            if headerBytes + contentCount > limits.maxHeaderBytes {
                return HTTPRequestError(
                    status: .requestHeaderFieldsTooLarge, reason: "header section larger than the limit")
            }
        case .chunkSize:
            if contentCount > limits.maxChunkExtensionBytes + 64 {
                return .badRequest("chunk size line too long")
            }
        case .chunkDataEnd:
            // RFC 9112 7.1: chunk-data is followed by CRLF and nothing else.
            if contentCount > 0 { return .badRequest("chunk data not followed by CRLF") }
        case .fixedBody, .chunkData, .failed:
            break
        }
        return nil
    }

    /// Handles one complete line; `raw` excludes the LF.
    private mutating func handleLine(_ raw: UnsafeRawBufferPointer) -> LineOutcome {
        // RFC 9112 2.2: lines end with CRLF. A bare LF is accepted by some recipients (a MAY);
        // we refuse it with 400 so no intermediary can read the message differently.
        let endsWithCR = raw.last == HTTPText.cr
        let content = UnsafeRawBufferPointer(rebasing: raw[0..<(raw.count - (endsWithCR ? 1 : 0))])
        if let error = lineLengthError(contentCount: content.count) { return .failed(error) }
        guard endsWithCR else { return .failed(.badRequest("line ends with a bare LF")) }
        // RFC 9112 2.2: a bare CR outside the content is an error (MUST reject or replace).
        if let base = content.baseAddress, memchr(base, Int32(HTTPText.cr), content.count) != nil {
            return .failed(.badRequest("bare CR in a line"))
        }
        switch state {
        case .requestLine:
            return handleRequestLine(content)
        case .headerFields:
            if content.isEmpty { return endOfHeaderSection() }
            if let error = handleFieldLine(content, isTrailer: false) { return .failed(error) }
            return .proceed
        case .trailerFields:
            // RFC 9112 7.1.2: the trailer section ends with an empty line, like the header section.
            if content.isEmpty { return .complete }
            if let error = handleFieldLine(content, isTrailer: true) { return .failed(error) }
            return .proceed
        case .chunkSize:
            return handleChunkSizeLine(content)
        case .chunkDataEnd:
            state = .chunkSize
            return .proceed
        case .fixedBody, .chunkData, .failed:
            return .proceed  // not a line state; unreachable by construction
        }
    }

    // MARK: - Request line (RFC 9112 3)

    private mutating func handleRequestLine(_ line: UnsafeRawBufferPointer) -> LineOutcome {
        if line.isEmpty {
            // RFC 9112 2.2: a server SHOULD ignore at least one empty line received before the
            // request line. We ignore a bounded number.
            leadingEmptyLines += 1
            if leadingEmptyLines > limits.maxLeadingEmptyLines {
                return .failed(.badRequest("too many empty lines before the request line"))
            }
            return .proceed
        }
        // RFC 9112 3: request-line = method SP request-target SP HTTP-version, single spaces.
        var firstSpace = -1
        var secondSpace = -1
        for position in 0..<line.count where line[position] == HTTPText.space {
            if firstSpace < 0 {
                firstSpace = position
            } else {
                secondSpace = position
                break
            }
        }
        guard firstSpace > 0, secondSpace > firstSpace + 1 else {
            return .failed(.badRequest("malformed request line"))
        }
        // RFC 9112 2.3: HTTP-version = "HTTP/" DIGIT "." DIGIT, case-sensitive.
        let versionBytes = UnsafeRawBufferPointer(rebasing: line[(secondSpace + 1)...])
        guard let parsedVersion = Self.parseVersion(versionBytes) else {
            return .failed(.badRequest("malformed HTTP version"))
        }
        guard parsedVersion == .http1_1 || parsedVersion == .http1_0 else {
            return .failed(HTTPRequestError(status: .httpVersionNotSupported, reason: "unsupported HTTP version"))
        }
        version = parsedVersion
        // RFC 9112 3.1: method = token.
        let methodBytes = UnsafeRawBufferPointer(rebasing: line[0..<firstSpace])
        for byte in methodBytes where !HTTPText.isTokenByte(byte) {
            return .failed(.badRequest("method is not a token"))
        }
        method = Self.method(from: methodBytes)
        // RFC 9112 3.2: the request-target has no whitespace and no fragment; only visible ASCII.
        let targetBytes = UnsafeRawBufferPointer(rebasing: line[(firstSpace + 1)..<secondSpace])
        for byte in targetBytes where byte < 0x21 || byte > 0x7E || byte == UInt8(ascii: "#") {
            return .failed(.badRequest("invalid character in request-target"))
        }
        if let error = parseTarget(targetBytes) { return .failed(error) }
        state = .headerFields
        return .proceed
    }

    private static func parseVersion(_ bytes: UnsafeRawBufferPointer) -> HTTPVersion? {
        guard bytes.count == 8, bytes[0] == UInt8(ascii: "H"), bytes[1] == UInt8(ascii: "T"),
            bytes[2] == UInt8(ascii: "T"), bytes[3] == UInt8(ascii: "P"), bytes[4] == UInt8(ascii: "/"),
            bytes[6] == UInt8(ascii: "."),
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[5]),
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[7])
        else { return nil }
        return HTTPVersion(major: Int(bytes[5] - UInt8(ascii: "0")), minor: Int(bytes[7] - UInt8(ascii: "0")))
    }

    /// The method for `bytes`, reusing the constants of common methods (no allocation).
    private static func method(from bytes: UnsafeRawBufferPointer) -> HTTPMethod {
        func matches(_ literal: StaticString) -> Bool {
            guard let base = bytes.baseAddress, bytes.count == literal.utf8CodeUnitCount else { return false }
            return memcmp(base, literal.utf8Start, bytes.count) == 0
        }
        switch bytes.count {
        case 3:
            if matches("GET") { return .GET }
            if matches("PUT") { return .PUT }
        case 4:
            if matches("POST") { return .POST }
            if matches("HEAD") { return .HEAD }
        case 5:
            if matches("PATCH") { return .PATCH }
        case 6:
            if matches("DELETE") { return .DELETE }
        case 7:
            if matches("OPTIONS") { return .OPTIONS }
        default:
            break
        }
        return HTTPMethod(rawValue: String(decoding: bytes, as: UTF8.self))
    }

    /// Splits the request-target into path and query (RFC 9112 3.2).
    private mutating func parseTarget(_ bytes: UnsafeRawBufferPointer) -> HTTPRequestError? {
        target = String(decoding: bytes, as: UTF8.self)
        if bytes[0] == UInt8(ascii: "/") {
            // RFC 9112 3.2.1: origin-form = absolute-path [ "?" query ].
            splitPathAndQuery(bytes, fullTargetIsPath: true)
            return nil
        }
        if bytes.count == 1 && bytes[0] == UInt8(ascii: "*") {
            // RFC 9112 3.2.4: asterisk-form, only for a server-wide OPTIONS.
            guard method == .OPTIONS else { return .badRequest("asterisk-form request-target without OPTIONS") }
            path = "*"
            query = nil
            return nil
        }
        // RFC 9112 3.2.2: absolute-form; the server uses the URI's path (and ignores Host).
        let schemeLength: Int
        if bytes.count >= 7, HTTPText.bytes(UnsafeRawBufferPointer(rebasing: bytes[0..<7]), equalLowercased: "http://") {
            schemeLength = 7
        } else if bytes.count >= 8,
            HTTPText.bytes(UnsafeRawBufferPointer(rebasing: bytes[0..<8]), equalLowercased: "https://")
        {
            schemeLength = 8
        } else {
            // authority-form (RFC 9112 3.2.3, CONNECT) and anything else are not served here.
            return .badRequest("request-target is not origin-form, absolute-form or asterisk-form")
        }
        var authorityEnd = schemeLength
        while authorityEnd < bytes.count, bytes[authorityEnd] != UInt8(ascii: "/"),
            bytes[authorityEnd] != UInt8(ascii: "?")
        {
            // RFC 9110 4.2.4: userinfo in an http(s) URI is treated as an error.
            if bytes[authorityEnd] == UInt8(ascii: "@") { return .badRequest("userinfo in request-target") }
            authorityEnd += 1
        }
        // RFC 9110 4.2.1: an http(s) URI with an empty host is invalid.
        guard authorityEnd > schemeLength else { return .badRequest("absolute-form request-target without host") }
        if authorityEnd == bytes.count {
            path = "/"
            query = nil
        } else if bytes[authorityEnd] == UInt8(ascii: "?") {
            path = "/"
            query = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[(authorityEnd + 1)...]), as: UTF8.self)
        } else {
            splitPathAndQuery(UnsafeRawBufferPointer(rebasing: bytes[authorityEnd...]), fullTargetIsPath: false)
        }
        return nil
    }

    private mutating func splitPathAndQuery(_ bytes: UnsafeRawBufferPointer, fullTargetIsPath: Bool) {
        if let base = bytes.baseAddress, let found = memchr(base, Int32(UInt8(ascii: "?")), bytes.count) {
            let questionMark = UnsafeRawPointer(found) - base
            path = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[0..<questionMark]), as: UTF8.self)
            query = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[(questionMark + 1)...]), as: UTF8.self)
        } else {
            path = fullTargetIsPath ? target : String(decoding: bytes, as: UTF8.self)
            query = nil
        }
    }

    // MARK: - Field lines (RFC 9112 5, RFC 9110 5)

    private mutating func handleFieldLine(_ line: UnsafeRawBufferPointer, isTrailer: Bool) -> HTTPRequestError? {
        // RFC 9112 5.2: obs-fold (a line starting with SP/HTAB) is rejected with 400. Right after
        // the request line, RFC 9112 2.2 likewise lets us reject leading whitespace.
        if HTTPText.isWhitespace(line[0]) {
            return .badRequest("obsolete line folding or whitespace before a field line")
        }
        fieldCount += 1
        if fieldCount > limits.maxHeaderCount {
            return HTTPRequestError(status: .requestHeaderFieldsTooLarge, reason: "too many header fields")
        }
        headerBytes += line.count
        // RFC 9112 5.1: field-line = field-name ":" OWS field-value OWS; no whitespace is allowed
        // between the name and the colon (400).
        var colon = 0
        while colon < line.count, HTTPText.isTokenByte(line[colon]) { colon += 1 }
        guard colon < line.count, line[colon] == HTTPText.colon else {
            if colon < line.count, HTTPText.isWhitespace(line[colon]) {
                return .badRequest("whitespace between field name and colon")
            }
            return .badRequest("invalid field name")
        }
        guard colon > 0 else { return .badRequest("empty field name") }
        var valueStart = colon + 1
        var valueEnd = line.count
        while valueStart < valueEnd, HTTPText.isWhitespace(line[valueStart]) { valueStart += 1 }
        while valueEnd > valueStart, HTTPText.isWhitespace(line[valueEnd - 1]) { valueEnd -= 1 }
        // RFC 9110 5.5: field values hold VCHAR, obs-text, SP and HTAB; NUL, CR, LF and the other
        // controls are rejected.
        let nameBytes = UnsafeRawBufferPointer(rebasing: line[0..<colon])
        let valueBytes = UnsafeRawBufferPointer(rebasing: line[valueStart..<valueEnd])
        for byte in valueBytes where !HTTPText.isFieldValueByte(byte) {
            return .badRequest("invalid character in field value")
        }
        let name = String(decoding: nameBytes, as: UTF8.self)
        let value = String(decoding: valueBytes, as: UTF8.self)
        if isTrailer {
            trailers.add(name, value)
            return nil
        }
        headers.add(name, value)
        return interpretField(name: nameBytes, value: valueBytes)
    }

    /// Records the framing facts carried by `Host`, `Content-Length`, `Transfer-Encoding` and
    /// `Expect`.
    private mutating func interpretField(
        name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer
    ) -> HTTPRequestError? {
        switch name.count {
        case 4 where HTTPText.bytes(name, equalLowercased: "host"):
            hostCount += 1
            // RFC 9112 3.2: an invalid Host value gets 400.
            guard Self.isValidHost(value) else { return .badRequest("invalid Host") }
        case 14 where HTTPText.bytes(name, equalLowercased: "content-length"):
            return recordContentLength(value)
        case 17 where HTTPText.bytes(name, equalLowercased: "transfer-encoding"):
            sawTransferEncoding = true
            var chunked = 0
            var others = 0
            Self.forEachListElement(value) { coding in
                // RFC 9112 7: transfer-coding names are case-insensitive.
                if HTTPText.bytes(coding, equalLowercased: "chunked") {
                    chunked += 1
                } else {
                    others += 1
                }
            }
            chunkedCodings += chunked
            otherCodings += others
        case 6 where HTTPText.bytes(name, equalLowercased: "expect"):
            // RFC 9110 10.1.1: the only expectation is 100-continue (case-insensitive).
            if HTTPText.bytes(value, equalLowercased: "100-continue") { expectsContinue = true }
        default:
            break
        }
        return nil
    }

    /// RFC 9110 8.6 / RFC 9112 6.3 step 5: Content-Length = 1*DIGIT. A list, or several fields,
    /// with one repeated value is accepted as that value; differing values, anything but digits
    /// (signs, spaces inside, empty elements) and overflow are 400.
    private mutating func recordContentLength(_ value: UnsafeRawBufferPointer) -> HTTPRequestError? {
        var error: HTTPRequestError?
        var elements = 0
        var emptyElement = false
        var recorded = contentLength
        Self.forEachListElement(value, keepingEmpty: true) { element in
            guard error == nil else { return }
            elements += 1
            if element.isEmpty {
                emptyElement = true
                return
            }
            var length = 0
            for byte in element {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else {
                    error = .badRequest("Content-Length is not a number")
                    return
                }
                let (times10, overflow1) = length.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = times10.addingReportingOverflow(Int(byte - UInt8(ascii: "0")))
                guard !overflow1, !overflow2 else {
                    error = .badRequest("Content-Length overflows")
                    return
                }
                length = sum
            }
            if let existing = recorded, existing != length {
                error = .badRequest("conflicting Content-Length values")
                return
            }
            recorded = length
        }
        if let error { return error }
        contentLength = recorded
        if emptyElement || elements == 0 { return .badRequest("empty Content-Length") }
        return nil
    }

    /// Calls `body` with each comma-separated element of `value`, OWS trimmed (RFC 9110 5.6.1).
    /// Empty elements are skipped unless `keepingEmpty`.
    private static func forEachListElement(
        _ value: UnsafeRawBufferPointer, keepingEmpty: Bool = false,
        _ body: (UnsafeRawBufferPointer) -> Void
    ) {
        var start = 0
        while start <= value.count {
            var end = start
            while end < value.count, value[end] != UInt8(ascii: ",") { end += 1 }
            var first = start
            var last = end
            while first < last, HTTPText.isWhitespace(value[first]) { first += 1 }
            while last > first, HTTPText.isWhitespace(value[last - 1]) { last -= 1 }
            if last > first || keepingEmpty {
                body(UnsafeRawBufferPointer(rebasing: value[first..<last]))
            }
            start = end + 1
        }
    }

    /// RFC 9112 3.2 / RFC 3986 3.2.2: Host = uri-host [ ":" port ]; an empty value is allowed.
    static func isValidHost(_ value: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        if index < value.count, value[index] == UInt8(ascii: "[") {
            // IP-literal: hex digits, ':' and '.' (IPv6, IPv4-mapped) or IPvFuture characters.
            index += 1
            var sawClose = false
            while index < value.count {
                let byte = value[index]
                index += 1
                if byte == UInt8(ascii: "]") {
                    sawClose = true
                    break
                }
                guard isRegNameByte(byte) || byte == UInt8(ascii: ":") else { return false }
            }
            guard sawClose, index > 2 else { return false }
        } else {
            while index < value.count, value[index] != UInt8(ascii: ":") {
                guard isRegNameByte(value[index]) else { return false }
                index += 1
            }
        }
        guard index < value.count else { return true }
        guard value[index] == UInt8(ascii: ":") else { return false }
        index += 1
        while index < value.count {
            guard value[index] >= UInt8(ascii: "0"), value[index] <= UInt8(ascii: "9") else { return false }
            index += 1
        }
        return true
    }

    /// unreserved / pct-encoded / sub-delims of RFC 3986 (the `%` is allowed without checking
    /// the escape, which is harmless here).
    private static func isRegNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "-._~%!$&'()*+,;=".utf8.contains(byte)
        }
    }

    // MARK: - Message body framing (RFC 9112 6)

    private mutating func endOfHeaderSection() -> LineOutcome {
        // RFC 9112 3.2: 400 for an HTTP/1.1 request without Host, and for any request with
        // more than one Host field line.
        if hostCount > 1 { return .failed(.badRequest("more than one Host")) }
        if hostCount == 0 && version == .http1_1 { return .failed(.badRequest("missing Host")) }
        var chunked = false
        if sawTransferEncoding {
            // RFC 9112 6.1: Transfer-Encoding in an HTTP/1.0 message means faulty framing.
            if version == .http1_0 { return .failed(.badRequest("Transfer-Encoding in an HTTP/1.0 request")) }
            // RFC 9112 6.1 / 6.3: Transfer-Encoding with Content-Length may be an attempt at request
            // smuggling; we reject it rather than dropping Content-Length.
            if contentLength != nil { return .failed(.badRequest("both Transfer-Encoding and Content-Length")) }
            if chunkedCodings + otherCodings == 0 { return .failed(.badRequest("empty Transfer-Encoding")) }
            // RFC 9112 6.1 / 7: we decode only `chunked`, alone. Any other coding, chunked applied
            // twice, or chunked not final: 501 Not Implemented, then close.
            guard chunkedCodings == 1, otherCodings == 0 else {
                return .failed(HTTPRequestError(status: .notImplemented, reason: "unsupported Transfer-Encoding"))
            }
            chunked = true
        }
        let length = contentLength ?? 0
        // Refuse an oversized body before reading any of it.
        if length > limits.maxBodyBytes {
            return .failed(HTTPRequestError(status: .contentTooLarge, reason: "Content-Length over the limit"))
        }
        if chunked {
            state = .chunkSize
        } else if length > 0 {
            // Nothing reserved: a body's buffer grows with what arrives (`bodyCapacity(toTake:)`).
            state = .fixedBody(remaining: length)
        } else {
            // RFC 9112 6.3 step 7: a request without Content-Length or Transfer-Encoding has no body.
            return .complete
        }
        // RFC 9110 10.1.1: an HTTP/1.0 client's 100-continue expectation is ignored.
        if version != .http1_1 { expectsContinue = false }
        if pausesAfterHead { return .headComplete }
        if expectsContinue { return .continueNeeded }
        return .proceed
    }

    /// RFC 9112 7.1: chunk-size = 1*HEXDIG, then chunk-ext, then CRLF.
    private mutating func handleChunkSizeLine(_ line: UnsafeRawBufferPointer) -> LineOutcome {
        var size = 0
        var digits = 0
        while digits < line.count, let digit = HexDigit.value(line[digits]).map(Int.init) {
            // No sign, `0x`, underscore or whitespace can sneak in: they stop the digits and then
            // fail the extension grammar below.
            guard size <= (Int.max - digit) / 16 else { return .failed(.badRequest("chunk size overflows")) }
            size = size * 16 + digit
            digits += 1
        }
        guard digits > 0 else { return .failed(.badRequest("invalid chunk size")) }
        if digits < line.count {
            let extensions = UnsafeRawBufferPointer(rebasing: line[digits...])
            chunkExtensionBytes += extensions.count
            if chunkExtensionBytes > limits.maxChunkExtensionBytes {
                return .failed(.badRequest("chunk extensions longer than the limit"))
            }
            guard Self.isValidChunkExtension(extensions) else {
                return .failed(.badRequest("invalid chunk size or extension"))
            }
        }
        if size == 0 {
            // RFC 9112 7.1: last-chunk, then the trailer section.
            state = .trailerFields
            return .proceed
        }
        if size > limits.maxBodyBytes - body.count {
            return .failed(HTTPRequestError(status: .contentTooLarge, reason: "chunked body over the limit"))
        }
        state = .chunkData(remaining: size)
        return .proceed
    }

    /// RFC 9112 7.1.1: chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] ),
    /// chunk-ext-name = token, chunk-ext-val = token / quoted-string.
    static func isValidChunkExtension(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        func skipWhitespace() {
            while index < bytes.count, HTTPText.isWhitespace(bytes[index]) { index += 1 }
        }
        func skipToken() -> Bool {
            let start = index
            while index < bytes.count, HTTPText.isTokenByte(bytes[index]) { index += 1 }
            return index > start
        }
        while index < bytes.count {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ";") else { return false }
            index += 1
            skipWhitespace()
            guard skipToken() else { return false }
            let afterName = index
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "=") else {
                index = afterName
                continue
            }
            index += 1
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "\"") {
                // RFC 9110 5.6.4: quoted-string with qdtext and quoted-pair.
                index += 1
                var closed = false
                while index < bytes.count {
                    let byte = bytes[index]
                    index += 1
                    if byte == UInt8(ascii: "\"") {
                        closed = true
                        break
                    }
                    if byte == UInt8(ascii: "\\") {
                        guard index < bytes.count, HTTPText.isFieldValueByte(bytes[index]) else { return false }
                        index += 1
                    } else if !HTTPText.isFieldValueByte(byte) {
                        return false
                    }
                }
                guard closed else { return false }
            } else {
                guard skipToken() else { return false }
            }
        }
        return true
    }

    // MARK: - Completion

    private mutating func completeRequest(consumed: Int) -> Step {
        let request = HTTPRequest(
            method: method, target: target, path: path, query: query, version: version,
            headers: headers, body: body, trailers: trailers)
        resetForNextRequest()
        return .request(request, consumed: consumed)
    }

    /// The request being assembled, without body or trailers (its header section is complete).
    private func currentHead() -> HTTPRequest {
        HTTPRequest(method: method, target: target, path: path, query: query, version: version, headers: headers)
    }

    private mutating func fail(_ error: HTTPRequestError) -> Step {
        state = .failed(error)
        return .error(error)
    }

    private mutating func resetForNextRequest() {
        state = .requestLine
        pendingLine.removeAll(keepingCapacity: true)
        target = ""
        path = ""
        query = nil
        headers = HTTPHeaders()
        headers.fields.reserveCapacity(12)
        trailers = HTTPHeaders()
        body = []
        leadingEmptyLines = 0
        headerBytes = 0
        fieldCount = 0
        chunkExtensionBytes = 0
        hostCount = 0
        contentLength = nil
        sawTransferEncoding = false
        chunkedCodings = 0
        otherCodings = 0
        expectsContinue = false
    }
}
