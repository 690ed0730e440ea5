import FuzzSupport
import HTTPServer

/// Fuzzes `HTTPRequestParser` with arbitrary bytes (RFC 9112 framing, limits, pipelining).
///
/// Each input is parsed three ways: whole, one byte at a time, and split at points derived from
/// the input; the three must report the same requests, `100 Continue` points and errors (the
/// parser promises its answer never depends on how bytes arrive). The server's parser, which
/// pauses after each head announcing a body, must report the same too, byte by byte and split,
/// and each head must be the head of the request that follows. Small limits make every limit
/// reachable within libFuzzer's input sizes. Each request's query items, keep-alive decision and
/// route match are computed too, as the server would.
@main
enum FuzzHTTPRequestParser {
    static func main() {
        FuzzHarness.main(name: "http-request-parser") { input in
            let bytes = Array(input)
            let whole = events(bytes, chunkEnds: [bytes.count])
            let byteByByte = events(bytes, chunkEnds: Array(stride(from: 1, through: bytes.count, by: 1)))
            let split = events(bytes, chunkEnds: splitPoints(bytes))
            guard whole == byteByByte, whole == split else {
                fatalError("split-dependent parse: whole \(whole), byte by byte \(byteByByte), split \(split)")
            }
            let pausedByByte = events(bytes, chunkEnds: Array(stride(from: 1, through: bytes.count, by: 1)), pausing: true)
            let pausedSplit = events(bytes, chunkEnds: splitPoints(bytes), pausing: true)
            guard whole == pausedByByte, whole == pausedSplit else {
                fatalError("pausing after heads changes the parse: \(whole), paused \(pausedByByte), \(pausedSplit)")
            }
        }
    }

    /// Limits small enough for fuzz inputs (a few KiB) to cross each of them.
    static let limits: HTTPRequestParser.Limits = {
        var limits = HTTPRequestParser.Limits()
        limits.maxRequestLineBytes = 96
        limits.maxHeaderBytes = 512
        limits.maxHeaderCount = 12
        limits.maxBodyBytes = 768
        limits.maxChunkExtensionBytes = 48
        limits.maxLeadingEmptyLines = 2
        return limits
    }()

    /// The server's route table shape (handlers are just the patterns).
    static let router: Router<String> = {
        var router = Router<String>()
        for (method, pattern) in [
            (HTTPMethod.GET, "/health"), (.GET, "/health/ready"), (.GET, "/metrics"), (.GET, "/openapi.yaml"),
            (.GET, "/v1/categories"), (.POST, "/v1/categories"), (.PUT, "/v1/categories"),
            (.GET, "/v1/categories/{id}"), (.PUT, "/v1/categories/{id}"), (.DELETE, "/v1/categories/{id}"),
            (.GET, "/v1/locations"), (.POST, "/v1/locations"), (.PUT, "/v1/locations"),
            (.GET, "/v1/locations/{id}"), (.PUT, "/v1/locations/{id}"), (.DELETE, "/v1/locations/{id}"),
            (.POST, "/v1/sync/push"), (.GET, "/v1/sync/changes"), (.GET, "/v1/info"),
            (.GET, "/v1/users/me"), (.PUT, "/v1/users/me"), (.DELETE, "/v1/users/me"),
        ] {
            router.add(method, pattern, pattern)
        }
        return router
    }()

    /// What the parser reported, in order.
    enum Event: Equatable, CustomStringConvertible {
        case request(HTTPRequest)
        case continueNeeded
        case error(HTTPRequestError)

        var description: String {
            switch self {
            case .request(let request): return "request(\(request.method) \(request.target), \(request.body.count) body bytes)"
            case .continueNeeded: return "continue"
            case .error(let error): return "error(\(error))"
            }
        }
    }

    /// Feeds `bytes` in chunks ending at `chunkEnds`, re-feeding unconsumed bytes as the server
    /// does after a request, a head or a `100 Continue` point. With `pausing`, the parser pauses
    /// after each head announcing a body (as the server's does); a head expecting `100 Continue`
    /// is reported as the continue point.
    static func events(_ bytes: [UInt8], chunkEnds: [Int], pausing: Bool = false) -> [Event] {
        var parser = HTTPRequestParser(limits: limits, pausesAfterHead: pausing)
        var lastHead: HTTPRequest?
        var events: [Event] = []
        var pending: [UInt8] = []
        var start = 0
        for end in chunkEnds where end > start {
            pending += bytes[start..<end]
            start = end
            while !pending.isEmpty {
                switch parser.parse(pending) {
                case .needMore:
                    pending.removeAll()
                case .continueNeeded(let consumed):
                    precondition(consumed > 0 && consumed <= pending.count, "continue consumed \(consumed) of \(pending.count)")
                    events.append(.continueNeeded)
                    pending.removeFirst(consumed)
                case .head(let head, let expectsContinue, let consumed):
                    precondition(pausing, "a head from a parser that does not pause")
                    precondition(consumed > 0 && consumed <= pending.count, "head consumed \(consumed) of \(pending.count)")
                    precondition(head.body.isEmpty && head.trailers.isEmpty, "a head with a body")
                    if expectsContinue { events.append(.continueNeeded) }
                    lastHead = head
                    pending.removeFirst(consumed)
                case .request(let request, let consumed):
                    precondition(consumed > 0 && consumed <= pending.count, "request consumed \(consumed) of \(pending.count)")
                    if let head = lastHead {
                        precondition(
                            head.method == request.method && head.target == request.target && head.headers == request.headers,
                            "the head differs from its request")
                        lastHead = nil
                    }
                    inspect(request)
                    events.append(.request(request))
                    pending.removeFirst(consumed)
                case .error(let error):
                    events.append(.error(error))
                    precondition(parser.parse([0x41]) == .error(error), "the parser must stay failed")
                    return events
                }
            }
        }
        return events
    }

    /// What the server computes from every request: query items, keep-alive, headers, route.
    static func inspect(_ request: HTTPRequest) {
        precondition(request.body.count <= limits.maxBodyBytes, "body over the limit")
        precondition(request.headers.count + request.trailers.count <= limits.maxHeaderCount, "too many fields")
        for item in request.queryItems {
            _ = item.name.utf8.count + item.value.utf8.count
        }
        _ = request.wantsKeepAlive
        _ = request.headers["content-type"]
        _ = request.headers.values(for: "authorization")
        switch router.match(request.method, path: request.path) {
        case .found(let pattern, let parameters, _):
            precondition(pattern.contains("{id}") == (parameters["id"] != nil), "parameter capture mismatch")
        case .methodNotAllowed(let allowed):
            precondition(!allowed.isEmpty, "405 without an Allow list")
        case .notFound:
            break
        }
    }

    /// Up to three split points taken from a hash of the input, so each input has its own split.
    static func splitPoints(_ bytes: [UInt8]) -> [Int] {
        guard bytes.count > 1 else { return [bytes.count] }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        var points = Set<Int>()
        for shift in [0, 21, 42] {
            points.insert(1 + Int((hash >> UInt64(shift)) % UInt64(bytes.count - 1)))
        }
        return points.sorted() + [bytes.count]
    }
}
