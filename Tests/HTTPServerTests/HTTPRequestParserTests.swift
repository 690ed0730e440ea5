import HTTPServer
import Testing

/// What the parser reported, in order, for one input.
enum ParseEvent: Equatable, CustomStringConvertible {
    case continueNeeded
    case request(HTTPRequest)
    case error(HTTPRequestError)

    var description: String {
        switch self {
        case .continueNeeded: return "continueNeeded"
        case .request(let request): return "request(\(request.method) \(request.target))"
        case .error(let error): return "error(\(error))"
        }
    }

    var request: HTTPRequest? {
        if case .request(let request) = self { return request }
        return nil
    }

    var status: Int? {
        if case .error(let error) = self { return error.status.code }
        return nil
    }
}

/// Feeds `chunks` in order to a fresh parser, re-feeding unconsumed bytes after each request,
/// and collects the events until an error or the end of the input. With `pausing`, the parser
/// pauses after each head announcing a body, as the server's does: a head expecting
/// `100 Continue` is reported as `continueNeeded`, and each head must be its request's.
func feed(_ chunks: [[UInt8]], limits: HTTPRequestParser.Limits, pausing: Bool = false) -> [ParseEvent] {
    var parser = HTTPRequestParser(limits: limits, pausesAfterHead: pausing)
    var lastHead: HTTPRequest?
    var events: [ParseEvent] = []
    for chunk in chunks {
        var offset = 0
        while true {
            let step = parser.parse(Array(chunk[offset...]))
            switch step {
            case .needMore:
                offset = chunk.count
            case .continueNeeded(let consumed):
                events.append(.continueNeeded)
                offset += consumed
            case .head(let head, let expectsContinue, let consumed):
                #expect(pausing && head.body.isEmpty)
                if expectsContinue { events.append(.continueNeeded) }
                lastHead = head
                offset += consumed
            case .request(let request, let consumed):
                if let head = lastHead {
                    #expect(head.method == request.method && head.target == request.target && head.headers == request.headers)
                    lastHead = nil
                }
                events.append(.request(request))
                offset += consumed
            case .error(let error):
                events.append(.error(error))
                return events
            }
            if offset >= chunk.count { break }
        }
    }
    return events
}

/// Parses `bytes` whole, byte by byte and in 7-byte pieces; expects the same events each way and
/// returns them.
func parse(
    _ bytes: [UInt8], limits: HTTPRequestParser.Limits = .init(),
    sourceLocation: SourceLocation = #_sourceLocation
) -> [ParseEvent] {
    let whole = feed([bytes], limits: limits)
    let byteByByte = feed(bytes.map { [$0] }, limits: limits)
    let pieces = feed(stride(from: 0, to: bytes.count, by: 7).map { Array(bytes[$0..<min($0 + 7, bytes.count)]) }, limits: limits)
    #expect(whole == byteByByte, "whole and byte-by-byte parses differ", sourceLocation: sourceLocation)
    #expect(whole == pieces, "whole and 7-byte-piece parses differ", sourceLocation: sourceLocation)
    let paused = feed([bytes], limits: limits, pausing: true)
    let pausedByteByByte = feed(bytes.map { [$0] }, limits: limits, pausing: true)
    #expect(whole == paused, "pausing after heads changes the parse", sourceLocation: sourceLocation)
    #expect(whole == pausedByteByByte, "pausing after heads changes the byte-by-byte parse", sourceLocation: sourceLocation)
    return whole
}

func parse(
    _ text: String, limits: HTTPRequestParser.Limits = .init(),
    sourceLocation: SourceLocation = #_sourceLocation
) -> [ParseEvent] {
    parse(Array(text.utf8), limits: limits, sourceLocation: sourceLocation)
}

/// The status of the single error `text` produces (nil when it produced none).
func errorStatus(
    _ text: String, limits: HTTPRequestParser.Limits = .init(), sourceLocation: SourceLocation = #_sourceLocation
) -> Int? {
    parse(text, limits: limits, sourceLocation: sourceLocation).last?.status
}

func errorStatus(
    _ bytes: [UInt8], limits: HTTPRequestParser.Limits = .init(), sourceLocation: SourceLocation = #_sourceLocation
) -> Int? {
    parse(bytes, limits: limits, sourceLocation: sourceLocation).last?.status
}

/// The single request `text` produces (nil otherwise).
func onlyRequest(
    _ text: String, limits: HTTPRequestParser.Limits = .init(), sourceLocation: SourceLocation = #_sourceLocation
) -> HTTPRequest? {
    let events = parse(text, limits: limits, sourceLocation: sourceLocation)
    #expect(events.count == 1, "expected one request, got \(events)", sourceLocation: sourceLocation)
    return events.first?.request
}

func limits(_ configure: (inout HTTPServerConfiguration) -> Void) -> HTTPRequestParser.Limits {
    var configuration = HTTPServerConfiguration()
    configure(&configuration)
    return HTTPRequestParser.Limits(configuration: configuration)
}

@Suite("HTTPRequestParser: request line (RFC 9112 3)")
struct HTTPRequestParserRequestLineTests {
    @Test("a simple GET is parsed into method, target, path, version and headers")
    func simpleGet() throws {
        let request = try #require(onlyRequest("GET /health HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n"))
        #expect(request.method == .GET)
        #expect(request.target == "/health")
        #expect(request.path == "/health")
        #expect(request.query == nil)
        #expect(request.version == .http1_1)
        #expect(request.headers.map(\.name) == ["Host", "Accept"])
        #expect(request.headers["accept"] == "*/*")
        #expect(request.body.isEmpty)
    }

    @Test("origin-form splits path and raw query at the first '?' (RFC 9112 3.2.1)")
    func originFormQuery() throws {
        let request = try #require(onlyRequest("GET /v1/locations?page=2&q=a%20b?c HTTP/1.1\r\nHost: h\r\n\r\n"))
        #expect(request.path == "/v1/locations")
        #expect(request.query == "page=2&q=a%20b?c")
        let empty = try #require(onlyRequest("GET /p? HTTP/1.1\r\nHost: h\r\n\r\n"))
        #expect(empty.path == "/p")
        #expect(empty.query == "")
    }

    @Test("absolute-form uses the URI's path and query (RFC 9112 3.2.2)")
    func absoluteForm() throws {
        let request = try #require(onlyRequest("GET http://example.com:8080/a/b?x=1 HTTP/1.1\r\nHost: example.com\r\n\r\n"))
        #expect(request.target == "http://example.com:8080/a/b?x=1")
        #expect(request.path == "/a/b")
        #expect(request.query == "x=1")
        let bare = try #require(onlyRequest("GET HTTPS://example.com HTTP/1.1\r\nHost: example.com\r\n\r\n"))
        #expect(bare.path == "/")
        #expect(bare.query == nil)
        let queryOnly = try #require(onlyRequest("GET http://example.com?y HTTP/1.1\r\nHost: example.com\r\n\r\n"))
        #expect(queryOnly.path == "/")
        #expect(queryOnly.query == "y")
    }

    @Test("absolute-form without host or with userinfo is 400 (RFC 9110 4.2.1, 4.2.4)")
    func absoluteFormInvalid() {
        #expect(errorStatus("GET http:///a HTTP/1.1\r\nHost: h\r\n\r\n") == 400)
        #expect(errorStatus("GET http://user@h/a HTTP/1.1\r\nHost: h\r\n\r\n") == 400)
        #expect(errorStatus("GET ftp://h/a HTTP/1.1\r\nHost: h\r\n\r\n") == 400)
    }

    @Test("asterisk-form is accepted for OPTIONS only (RFC 9112 3.2.4)")
    func asteriskForm() throws {
        let request = try #require(onlyRequest("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n"))
        #expect(request.path == "*")
        #expect(errorStatus("GET * HTTP/1.1\r\nHost: h\r\n\r\n") == 400)
    }

    @Test("authority-form and relative targets are 400 (RFC 9112 3.2.3)")
    func otherForms() {
        #expect(errorStatus("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n") == 400)
        #expect(errorStatus("GET a/b HTTP/1.1\r\nHost: h\r\n\r\n") == 400)
    }

    @Test("the request line needs exactly one SP between its parts (RFC 9112 3)")
    func singleSpaces() {
        #expect(errorStatus("GET  / HTTP/1.1\r\nHost: h\r\n\r\n") == 400)
        #expect(errorStatus("GET / HTTP/1.1 \r\nHost: h\r\n\r\n") == 400)
        #expect(errorStatus(" GET / HTTP/1.1\r\nHost: h\r\n\r\n") == 400)
        #expect(errorStatus("GET\t/ HTTP/1.1\r\nHost: h\r\n\r\n") == 400)
        #expect(errorStatus("GET /\r\nHost: h\r\n\r\n") == 400)
        #expect(errorStatus("GET / HTTP/1.1 extra\r\nHost: h\r\n\r\n") == 400)
    }

    @Test("the method is a case-sensitive token (RFC 9112 3.1)")
    func methodToken() throws {
        #expect(errorStatus("GE(T / HTTP/1.1\r\nHost: h\r\n\r\n") == 400)
        #expect(errorStatus("G\u{7F}T / HTTP/1.1\r\nHost: h\r\n\r\n") == 400)
        let lower = try #require(onlyRequest("get / HTTP/1.1\r\nHost: h\r\n\r\n"))
        #expect(lower.method.rawValue == "get")
        #expect(lower.method != .GET)
        let custom = try #require(onlyRequest("PROPFIND / HTTP/1.1\r\nHost: h\r\n\r\n"))
        #expect(custom.method == HTTPMethod(rawValue: "PROPFIND"))
        for method in ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"] {
            let request = try #require(onlyRequest("\(method) / HTTP/1.1\r\nHost: h\r\n\r\n"))
            #expect(request.method.rawValue == method)
        }
    }

    @Test("HTTP/1.1 and HTTP/1.0 are accepted, other HTTP/x.y is 505, anything else 400 (RFC 9112 2.3)")
    func versions() throws {
        let old = try #require(onlyRequest("GET / HTTP/1.0\r\n\r\n"))
        #expect(old.version == .http1_0)
        for version in ["HTTP/2.0", "HTTP/1.2", "HTTP/0.9", "HTTP/3.0"] {
            #expect(errorStatus("GET / \(version)\r\nHost: h\r\n\r\n") == 505, "\(version)")
        }
        for version in ["http/1.1", "HTTP/1.10", "HTTP/1", "HTTP/1.1.1", "HTTP/a.b", "HTTPS/1.1"] {
            #expect(errorStatus("GET / \(version)\r\nHost: h\r\n\r\n") == 400, "\(version)")
        }
    }

    @Test("the request-target holds only visible ASCII and no fragment (RFC 9112 3.2)")
    func targetCharacters() {
        #expect(errorStatus("GET /a#frag HTTP/1.1\r\nHost: h\r\n\r\n") == 400)
        #expect(errorStatus(Array("GET /caf".utf8) + [0xC3, 0xA9] + Array(" HTTP/1.1\r\nHost: h\r\n\r\n".utf8)) == 400)
        #expect(errorStatus(Array("GET /a".utf8) + [0x7F] + Array(" HTTP/1.1\r\nHost: h\r\n\r\n".utf8)) == 400)
    }

    @Test("a request line longer than the limit is 414, even before its end arrives")
    func requestLineLimit() {
        let small = limits { $0.maxRequestLineBytes = 32 }
        let exact = "GET /" + String(repeating: "a", count: 32 - 14) + " HTTP/1.1"
        #expect(exact.utf8.count == 32)
        #expect(onlyRequest(exact + "\r\nHost: h\r\n\r\n", limits: small) != nil)
        let over = "GET /" + String(repeating: "a", count: 32 - 13) + " HTTP/1.1"
        #expect(errorStatus(over + "\r\nHost: h\r\n\r\n", limits: small) == 414)
        #expect(errorStatus("GET /" + String(repeating: "a", count: 100), limits: small) == 414)
    }

    @Test("empty lines before the request line are ignored, up to a bound (RFC 9112 2.2)")
    func leadingEmptyLines() throws {
        let request = try #require(onlyRequest("\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n"))
        #expect(request.path == "/")
        let eight = String(repeating: "\r\n", count: 8)
        #expect(onlyRequest(eight + "GET / HTTP/1.1\r\nHost: h\r\n\r\n") != nil)
        #expect(errorStatus(eight + "\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n") == 400)
    }
}

@Suite("HTTPRequestParser: line endings (RFC 9112 2.2)")
struct HTTPRequestParserLineEndingTests {
    @Test("a bare LF ends no line: 400 (RFC 9112 2.2 allows it; we refuse it)")
    func bareLF() {
        #expect(errorStatus("GET / HTTP/1.1\nHost: h\r\n\r\n") == 400)
        #expect(errorStatus("GET / HTTP/1.1\r\nHost: h\n\r\n") == 400)
        #expect(errorStatus("GET / HTTP/1.1\r\nHost: h\r\n\n") == 400)
        #expect(errorStatus("\nGET / HTTP/1.1\r\nHost: h\r\n\r\n") == 400)
    }

    @Test("a bare CR is 400 (RFC 9112 2.2 MUST)")
    func bareCR() {
        #expect(errorStatus("GET /\r HTTP/1.1\r\nHost: h\r\n\r\n") == 400)
        #expect(errorStatus("GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n") == 400)
        #expect(errorStatus("GET / HTTP/1.1\r\nHost: h\r\nX: 1\r\r\n\r\n") == 400)
        #expect(errorStatus("GET / HTTP/1.1\r\nHost: h\r\n\r\r\n") == 400)
    }
}

@Suite("HTTPRequestParser: header fields (RFC 9112 5)")
struct HTTPRequestParserFieldTests {
    @Test("optional whitespace around values is trimmed; empty values are kept (RFC 9112 5.1)")
    func owsTrimmed() throws {
        let request = try #require(onlyRequest("GET / HTTP/1.1\r\nHost: h\r\nX-A: \t a b \t \r\nX-B:\r\nX-C:c\r\n\r\n"))
        #expect(request.headers["x-a"] == "a b")
        #expect(request.headers["X-B"] == "")
        #expect(request.headers["x-c"] == "c")
    }

    @Test("whitespace between field name and colon is 400 (RFC 9112 5.1)")
    func spaceBeforeColon() {
        #expect(errorStatus("GET / HTTP/1.1\r\nHost : h\r\n\r\n") == 400)
        #expect(errorStatus("GET / HTTP/1.1\r\nHost: h\r\nX-A\t: 1\r\n\r\n") == 400)
    }

    @Test("obsolete line folding is 400 (RFC 9112 5.2)")
    func obsFold() {
        #expect(errorStatus("GET / HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n 2\r\n\r\n") == 400)
        #expect(errorStatus("GET / HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n\t2\r\n\r\n") == 400)
        #expect(errorStatus("GET / HTTP/1.1\r\n Host: h\r\n\r\n") == 400)
    }

    @Test("NUL, other controls and DEL in a value are 400; HTAB and obs-text are allowed (RFC 9110 5.5)")
    func valueCharacters() throws {
        for control: UInt8 in [0x00, 0x01, 0x0B, 0x1F, 0x7F] {
            let bytes = Array("GET / HTTP/1.1\r\nHost: h\r\nX-A: a".utf8) + [control] + Array("b\r\n\r\n".utf8)
            #expect(errorStatus(bytes) == 400, "byte \(control)")
        }
        let tab = try #require(onlyRequest("GET / HTTP/1.1\r\nHost: h\r\nX-A: a\tb\r\n\r\n"))
        #expect(tab.headers["X-A"] == "a\tb")
        let utf8 = try #require(onlyRequest("GET / HTTP/1.1\r\nHost: h\r\nX-A: café\r\n\r\n"))
        #expect(utf8.headers["X-A"] == "café")
    }

    @Test("field names are tokens; a line without colon or with an empty name is 400 (RFC 9112 5.1)")
    func fieldNames() {
        #expect(errorStatus("GET / HTTP/1.1\r\nHost: h\r\nX(A): 1\r\n\r\n") == 400)
        #expect(errorStatus("GET / HTTP/1.1\r\nHost: h\r\n: 1\r\n\r\n") == 400)
        #expect(errorStatus("GET / HTTP/1.1\r\nHost: h\r\nno colon\r\n\r\n") == 400)
        #expect(errorStatus("GET / HTTP/1.1\r\nHost: h\r\nnocolon\r\n\r\n") == 400)
    }

    @Test("a header section over maxHeaderBytes is 431, also before it ends")
    func headerBytesLimit() {
        let small = limits { $0.maxHeaderBytes = 40 }
        // "Host: h" is 7 bytes; a 33-byte field brings the total to exactly 40.
        let field33 = "X-A: " + String(repeating: "a", count: 28)
        #expect(onlyRequest("GET / HTTP/1.1\r\nHost: h\r\n\(field33)\r\n\r\n", limits: small) != nil)
        #expect(errorStatus("GET / HTTP/1.1\r\nHost: h\r\n\(field33)a\r\n\r\n", limits: small) == 431)
        #expect(errorStatus("GET / HTTP/1.1\r\nHost: h\r\nX-A: " + String(repeating: "a", count: 200), limits: small) == 431)
    }

    @Test("more than maxHeaderCount fields is 431")
    func headerCountLimit() {
        let small = limits { $0.maxHeaderCount = 3 }
        #expect(onlyRequest("GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\n\r\n", limits: small) != nil)
        #expect(errorStatus("GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", limits: small) == 431)
    }

    @Test("HTTP/1.1 needs exactly one valid Host; HTTP/1.0 at most one (RFC 9112 3.2)")
    func host() {
        #expect(errorStatus("GET / HTTP/1.1\r\nX: 1\r\n\r\n") == 400)
        #expect(errorStatus("GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n") == 400)
        #expect(errorStatus("GET / HTTP/1.0\r\nHost: a\r\nhost: b\r\n\r\n") == 400)
        #expect(onlyRequest("GET / HTTP/1.0\r\n\r\n") != nil)
        for valid in ["example.com", "example.com:8080", "127.0.0.1:80", "[::1]", "[::1]:8080", "", "a.b-c_d~e"] {
            #expect(onlyRequest("GET / HTTP/1.1\r\nHost: \(valid)\r\n\r\n") != nil, "\(valid)")
        }
        for invalid in ["a b", "a/b", "user@host", "[::1", "h:80x", "h:80:90", "[::1]x", "a\"b"] {
            #expect(errorStatus("GET / HTTP/1.1\r\nHost: \(invalid)\r\n\r\n") == 400, "\(invalid)")
        }
    }
}

@Suite("HTTPRequestParser: message body framing (RFC 9112 6)")
struct HTTPRequestParserBodyTests {
    @Test("a Content-Length body is read exactly; the next request follows (RFC 9112 6.2)")
    func contentLengthBody() throws {
        let events = parse("POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhelloGET /b HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(events.count == 2)
        #expect(events.first?.request?.body == Array("hello".utf8))
        #expect(events.last?.request?.path == "/b")
    }

    @Test("a request without Content-Length or Transfer-Encoding has no body (RFC 9112 6.3)")
    func noBody() throws {
        var parser = HTTPRequestParser()
        let head = "GET / HTTP/1.1\r\nHost: h\r\n\r\n"
        let step = parser.parse(Array((head + "hello").utf8))
        guard case .request(let request, let consumed) = step else {
            Issue.record("expected a request, got \(step)")
            return
        }
        #expect(request.body.isEmpty)
        #expect(consumed == head.utf8.count)
    }

    @Test("Content-Length and Transfer-Encoding together are 400 (RFC 9112 6.1)")
    func contentLengthAndTransferEncoding() {
        #expect(errorStatus("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n") == 400)
        #expect(errorStatus("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n0\r\n\r\n") == 400)
    }

    @Test("differing Content-Length values are 400; identical repeats are accepted (RFC 9112 6.3 step 5)")
    func repeatedContentLength() throws {
        #expect(errorStatus("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5, 6\r\n\r\nhello!") == 400)
        #expect(errorStatus("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!") == 400)
        let list = try #require(onlyRequest("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5, 5\r\n\r\nhello"))
        #expect(list.body == Array("hello".utf8))
        let fields = try #require(onlyRequest("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello"))
        #expect(fields.body == Array("hello".utf8))
    }

    @Test("Content-Length is digits only; signs, spaces, hex, empty and overflow are 400 (RFC 9110 8.6)")
    func contentLengthSyntax() throws {
        for value in ["+5", "-1", "5 5", "0x5", "", "5,", "five", "99999999999999999999999"] {
            #expect(errorStatus("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: \(value)\r\n\r\nhello") == 400, "\(value)")
        }
        let zeros = try #require(onlyRequest("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 005\r\n\r\nhello"))
        #expect(zeros.body.count == 5)
    }

    @Test("Content-Length over maxBodyBytes is 413 before any body byte; exactly at the limit is accepted")
    func contentLengthLimit() throws {
        let small = limits { $0.maxBodyBytes = 10 }
        #expect(parse("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\n", limits: small) == [
            .error(HTTPRequestError(status: .contentTooLarge, reason: "Content-Length over the limit"))
        ])
        let exact = try #require(onlyRequest("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n0123456789", limits: small))
        #expect(exact.body.count == 10)
    }

    @Test("Transfer-Encoding in HTTP/1.0 is 400 (RFC 9112 6.1)")
    func transferEncodingHTTP10() {
        #expect(errorStatus("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n") == 400)
    }

    @Test("a Transfer-Encoding other than exactly chunked is 501 (RFC 9112 6.1)")
    func unsupportedTransferEncoding() throws {
        for value in ["gzip", "gzip, chunked", "chunked, gzip", "chunked, chunked", "chunked;q=1", "identity"] {
            #expect(errorStatus("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: \(value)\r\n\r\n0\r\n\r\n") == 501, "\(value)")
        }
        #expect(errorStatus("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n") == 501)
        #expect(errorStatus("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: \r\n\r\n") == 400)
        let upper = try #require(onlyRequest("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: Chunked\r\n\r\n1\r\na\r\n0\r\n\r\n"))
        #expect(upper.body == Array("a".utf8))
    }
}

@Suite("HTTPRequestParser: chunked transfer coding (RFC 9112 7.1)")
struct HTTPRequestParserChunkedTests {
    let head = "POST /upload HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"

    @Test("chunks are decoded; extensions are ignored; trailers are kept apart (RFC 9112 7.1)")
    func decodesChunks() throws {
        let body = "4;ext=1\r\nWiki\r\n5 ; name = \"q \\\"x\\\"\" ;flag\r\npedia\r\n000E\r\n in\r\n\r\nchunks.\r\n0;last=yes\r\nX-Checksum: abc\r\nX-Other: 1\r\n\r\n"
        let request = try #require(onlyRequest(head + body))
        #expect(String(decoding: request.body, as: UTF8.self) == "Wikipedia in\r\n\r\nchunks.")
        #expect(request.trailers["x-checksum"] == "abc")
        #expect(request.trailers.count == 2)
        #expect(request.headers["X-Checksum"] == nil)
    }

    @Test("chunk sizes with a sign, 0x, underscore, whitespace, no digits or overflow are 400 (RFC 9112 7.1)")
    func badChunkSizes() {
        for size in ["-1", "+1", "0x5", "1_0", " 5", "5 ", "", "g", "5\t", "FFFFFFFFFFFFFFFFF", "10000000000000000"] {
            #expect(errorStatus(head + "\(size)\r\nhello\r\n0\r\n\r\n") == 400, "\(size)")
        }
    }

    @Test("a huge chunk size that fits in an integer is 413 before its data (RFC 9112 7.1)")
    func hugeChunk() {
        #expect(errorStatus(head + "FFFFFFFF\r\n") == 413)
        #expect(errorStatus(head + "7FFFFFFFFFFFFFFF\r\n") == 413)
    }

    @Test("chunks adding up past maxBodyBytes are 413; exactly the limit is accepted")
    func cumulativeLimit() throws {
        let small = limits { $0.maxBodyBytes = 10 }
        #expect(errorStatus(head + "6\r\n012345\r\n5\r\n", limits: small) == 413)
        let exact = try #require(onlyRequest(head + "6\r\n012345\r\n4\r\n6789\r\n0\r\n\r\n", limits: small))
        #expect(exact.body.count == 10)
    }

    @Test("chunk data must be followed by CRLF (RFC 9112 7.1)")
    func dataCRLF() {
        #expect(errorStatus(head + "5\r\nhelloX\r\n0\r\n\r\n") == 400)
        #expect(errorStatus(head + "5\r\nhello\n0\r\n\r\n") == 400)
        #expect(errorStatus(head + "5\r\nhello\r\r\n0\r\n\r\n") == 400)
    }

    @Test("malformed chunk extensions are 400 (RFC 9112 7.1.1)")
    func badExtensions() {
        for ext in [";", "; ", ";=x", ";a=", ";a=\"unterminated", "x", " x", ";a b", ";a;", ";a=b c"] {
            #expect(errorStatus(head + "5\(ext)\r\nhello\r\n0\r\n\r\n") == 400, "\(ext)")
        }
    }

    @Test("chunk extensions are bounded per request")
    func extensionLimit() {
        let small = limits { $0.maxChunkExtensionBytes = 16 }
        #expect(onlyRequest(head + "1;abcdefgh\r\na\r\n0\r\n\r\n", limits: small) != nil)
        #expect(errorStatus(head + "1;abcdefgh\r\na\r\n1;abcdefgh\r\nb\r\n0\r\n\r\n", limits: small) == 400)
        #expect(errorStatus(head + "1;" + String(repeating: "a", count: 500), limits: small) == 400)
    }

    @Test("trailers follow the header rules and limits (RFC 9112 7.1.2)")
    func trailerRules() {
        #expect(errorStatus(head + "0\r\nX-A: 1\r\n folded\r\n\r\n") == 400)
        #expect(errorStatus(head + "0\r\nX-A : 1\r\n\r\n") == 400)
        let few = limits { $0.maxHeaderCount = 3 }
        #expect(errorStatus(head + "0\r\nA: 1\r\nB: 2\r\n\r\n", limits: few) == 431)
        let small = limits { $0.maxHeaderBytes = 60 }
        #expect(errorStatus(head + "0\r\nX-A: " + String(repeating: "a", count: 40) + "\r\n\r\n", limits: small) == 431)
    }
}

@Suite("HTTPRequestParser: expectations, pipelining, state")
struct HTTPRequestParserFlowTests {
    @Test("Expect: 100-continue with a pending body reports continueNeeded once (RFC 9110 10.1.1)")
    func expectContinue() {
        let events = parse("POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\nContent-Length: 5\r\n\r\nhello")
        #expect(events.count == 2)
        #expect(events.first == .continueNeeded)
        #expect(events.last?.request?.body == Array("hello".utf8))
        let chunked = parse("POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
        #expect(chunked.first == .continueNeeded)
    }

    @Test("a parser that pauses after heads reports the head of a request with a body before any of the body")
    func pausesAfterHead() {
        let head = "POST /v1/locations?x=1 HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer t\r\nContent-Length: 5\r\n\r\n"
        var parser = HTTPRequestParser(pausesAfterHead: true)
        let step = parser.parse(Array((head + "hel").utf8))
        guard case .head(let request, let expectsContinue, let consumed) = step else {
            Issue.record("expected a head, got \(step)")
            return
        }
        #expect(consumed == head.utf8.count)
        #expect(!expectsContinue)
        #expect(request.method == .POST && request.path == "/v1/locations" && request.query == "x=1")
        #expect(request.headers["Authorization"] == "Bearer t")
        #expect(request.body.isEmpty)
        #expect(parser.phase == .body)
        #expect(parser.bodyContentLength == 5)
        #expect(parser.parse(Array("hel".utf8)) == .needMore)
        guard case .request(let complete, consumed: 2) = parser.parse(Array("lo".utf8)) else {
            Issue.record("expected the request")
            return
        }
        #expect(complete.body == Array("hello".utf8))

        // A chunked body and an expectation; a bodiless request and HTTP/1.0's expectation do not pause or expect.
        var chunked = HTTPRequestParser(pausesAfterHead: true)
        let chunkedHead = "PUT / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n"
        guard case .head(_, expectsContinue: true, consumed: chunkedHead.utf8.count) = chunked.parse(Array(chunkedHead.utf8))
        else {
            Issue.record("expected a chunked head expecting 100 Continue")
            return
        }
        #expect(chunked.bodyContentLength == nil)
        var bodiless = HTTPRequestParser(pausesAfterHead: true)
        guard case .request = bodiless.parse(Array("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n".utf8)) else {
            Issue.record("expected a bodiless request at once")
            return
        }
        var old = HTTPRequestParser(pausesAfterHead: true)
        let oldHead = "POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n"
        guard case .head(_, expectsContinue: false, _) = old.parse(Array(oldHead.utf8)) else {
            Issue.record("expected an HTTP/1.0 head without the expectation")
            return
        }
    }

    @Test("no continueNeeded without a body, for HTTP/1.0, or when the body is refused first")
    func noContinue() {
        #expect(parse("GET / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n\r\n").first?.request != nil)
        #expect(parse("POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\na").first?.request != nil)
        let small = limits { $0.maxBodyBytes = 4 }
        #expect(parse("POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n", limits: small).map(\.status) == [413])
    }

    @Test("pipelined requests come out one at a time, in order, with their consumed byte counts")
    func pipelining() throws {
        let first = "GET /1 HTTP/1.1\r\nHost: h\r\n\r\n"
        let second = "POST /2 HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nab"
        let third = "GET /3 HTTP/1.1\r\nHost: h\r\n\r\n"
        let events = parse(first + second + third)
        #expect(events.compactMap(\.request?.path) == ["/1", "/2", "/3"])
        var parser = HTTPRequestParser()
        let step = parser.parse(Array((first + second + third).utf8))
        guard case .request(_, let consumed) = step else {
            Issue.record("expected a request")
            return
        }
        #expect(consumed == first.utf8.count)
    }

    @Test("after an error the parser stays failed")
    func staysFailed() {
        var parser = HTTPRequestParser()
        let first = parser.parse(Array("BAD\r\n".utf8))
        #expect(first == .error(.badRequest("malformed request line")))
        #expect(parser.parse(Array("GET / HTTP/1.1\r\nHost: h\r\n\r\n".utf8)) == first)
    }

    @Test("phase moves from idle to head to body and back to idle")
    func phases() {
        var parser = HTTPRequestParser()
        #expect(parser.phase == .idle)
        #expect(parser.parse(Array("POST / HT".utf8)) == .needMore)
        #expect(parser.phase == .head)
        #expect(parser.parse(Array("TP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\na".utf8)) == .needMore)
        #expect(parser.phase == .body)
        if case .request = parser.parse(Array("bc".utf8)) {} else { Issue.record("expected a request") }
        #expect(parser.phase == .idle)
    }

    @Test("empty lines before a request line are part of the request head (its header timeout runs)")
    func emptyLinesArePhaseHead() {
        var parser = HTTPRequestParser()
        #expect(parser.parse(Array("\r".utf8)) == .needMore)
        #expect(parser.phase == .head)
        #expect(parser.parse(Array("\n".utf8)) == .needMore)
        #expect(parser.phase == .head)
        if case .request = parser.parse(Array("GET / HTTP/1.1\r\nHost: h\r\n\r\n".utf8)) {} else {
            Issue.record("expected a request")
        }
        #expect(parser.phase == .idle)
    }

    @Test("bodyContentLength is the Content-Length while a fixed body is received, nil for chunked bodies")
    func bodyContentLength() {
        var parser = HTTPRequestParser()
        #expect(parser.bodyContentLength == nil)
        #expect(parser.parse(Array("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\na".utf8)) == .needMore)
        #expect(parser.bodyContentLength == 3)
        if case .request = parser.parse(Array("bc".utf8)) {} else { Issue.record("expected a request") }
        #expect(parser.bodyContentLength == nil)
        #expect(parser.parse(Array("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)) == .needMore)
        #expect(parser.phase == .body)
        #expect(parser.bodyContentLength == nil)
    }
}

extension HTTPRequestError {
    static func badRequest(_ reason: String) -> HTTPRequestError {
        HTTPRequestError(status: .badRequest, reason: reason)
    }
}
