import FirebaseAdmin
import HTTPClient

/// An `HTTPTransport` that hands requests straight to a `FakeGoogle`, without sockets. The host of
/// the URL is ignored (the fake routes by path), so every base URL reaches the fake.
public struct InProcessTransport: HTTPTransport {
    /// The fake answering every request.
    public let fake: FakeGoogle

    /// A transport answering from `fake` without a socket.
    public init(fake: FakeGoogle) {
        self.fake = fake
    }

    /// The fake's answer to the request.
    public func send(_ request: TransportRequest) throws -> TransportResponse {
        if fake.recordTransport(url: request.url) {
            throw TransportError("connection reset by peer (injected)")
        }
        guard let schemeEnd = request.url.range(of: "://") else { throw TransportError("invalid URL \(request.url)") }
        var rest = request.url[schemeEnd.upperBound...]
        if let fragment = rest.firstIndex(of: "#") { rest = rest[..<fragment] }
        let pathStart = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let target = rest[pathStart...]
        var path = Substring(target)
        var query = Substring("")
        if let questionMark = target.firstIndex(of: "?") {
            path = target[..<questionMark]
            query = target[target.index(after: questionMark)...]
        }
        let answer = fake.handle(
            method: request.method, path: path.isEmpty ? "/" : String(path), query: String(query),
            headers: request.headers, body: request.body)
        return TransportResponse(status: answer.status, headers: answer.headers, body: answer.body)
    }
}
