/// Where a request's handler runs.
public enum HTTPExecutionMode: Sendable {
    /// On the I/O thread that parsed the request: only for cheap work that never blocks.
    case inline
    /// On the bounded worker pool: anything that may block (database, network).
    case worker
}

/// The application: the server calls it for every complete request.
public protocol HTTPResponder: Sendable {
    /// Cheap, non-blocking routes (e.g. GET /health) may answer on the I/O thread (`.inline`);
    /// everything else (database work) runs on the bounded worker pool. Default: `.worker`.
    func executionMode(for request: HTTPRequest) -> HTTPExecutionMode

    /// Produces the response. Called on a worker thread (or inline). May block (database).
    func respond(to request: HTTPRequest, connection: ConnectionInfo) -> HTTPResponse

    /// Decides about a request's body from its head alone, before any of the body is charged or
    /// read: called when a header section announcing a body is complete and the body did not
    /// arrive whole with it (e.g. to refuse a body its route does not take, 413, so that nobody
    /// holds the body budget with bodies nothing reads). `head` has an empty body. Called first on the I/O thread with
    /// `mayBlock` false, where it must answer at once (e.g. from caches): `.decideOnWorker`
    /// when it cannot, and it is then called again on a worker thread with `mayBlock` true
    /// (where `.decideOnWorker` is not an answer). A refusal is answered instead of the request,
    /// with `Connection: close`. Default: admit, charged to the client's address.
    func admitBody(of head: HTTPRequest, connection: ConnectionInfo, mayBlock: Bool) -> HTTPBodyAdmission
    /// Answers a `.worker` request: a response, or a wait that holds the request without a thread
    /// (`HTTPWait`, long-poll). Default: `respond`. `.inline` requests always go to `respond`.
    func answer(to request: HTTPRequest, connection: ConnectionInfo) -> HTTPAnswer

    /// Renders a framing/limit error the server detected itself (400, 408, 413, 414, 431, 501,
    /// 505) or its overload answer (503 when the body budget or the worker queue is full, with
    /// `error.retryAfterSeconds`). Default: plain-text body with the status, plus `Retry-After`
    /// when the error has one. The app overrides it to render its JSON error body (e.g. 413 as
    /// its E010). The server always adds `Connection: close` to these.
    func response(for error: HTTPRequestError) -> HTTPResponse
}

/// What the application decided about a request's body from its head
/// (`HTTPResponder.admitBody(of:connection:mayBlock:)`).
public enum HTTPBodyAdmission: Sendable {
    /// Receive the body. Its bytes are charged to `owner` (e.g. the authenticated user) in the
    /// per-client shares of the body budget (`maxBufferedBodyBytesPerClient`); nil charges the
    /// client's address.
    case admit(owner: String?)
    /// Answer this instead; the body is never read and the connection closes after the answer.
    case refuse(HTTPResponse)
    /// Deciding needs work that may block (e.g. verifying a token with keys not cached yet): ask
    /// again on a worker thread. Only an answer when called with `mayBlock` false.
    case decideOnWorker
}

extension HTTPResponder {
    /// Runs every request on the worker pool.
    public func executionMode(for request: HTTPRequest) -> HTTPExecutionMode { .worker }

    /// Admits every body, charged to the client's address.
    public func admitBody(of head: HTTPRequest, connection: ConnectionInfo, mayBlock: Bool) -> HTTPBodyAdmission {
        .admit(owner: nil)
    }

    /// Answers with `respond`: no request waits.
    public func answer(to request: HTTPRequest, connection: ConnectionInfo) -> HTTPAnswer {
        .response(respond(to: request, connection: connection))
    }

    /// A plain-text body naming the status, e.g. `400 Bad Request`, with `Retry-After` when the
    /// error has one.
    public func response(for error: HTTPRequestError) -> HTTPResponse {
        var response = HTTPResponse(
            status: error.status,
            headers: ["Content-Type": "text/plain; charset=utf-8"],
            body: Array("\(error.status.code) \(error.status.reasonPhrase)\n".utf8)
        )
        if let seconds = error.retryAfterSeconds {
            response.headers.set("Retry-After", String(seconds))
        }
        return response
    }
}
