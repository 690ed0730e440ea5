import HTTPServer
import JSON
import Locify

/// One entry of the route table: what handles the request, and what the pipeline must know of it
/// before it runs (on which thread, whether it needs a token, whether it takes a body).
struct Route: Sendable {
    /// Where the request runs: on the I/O thread (cheap, never blocks) or on a worker.
    enum Execution: Sendable {
        case inline
        case worker
    }

    enum Handler: Sendable {
        /// Operational endpoints: no token, no rate limit of any kind (openapi.yaml).
        case open(@Sendable (HTTPRequest) throws -> HTTPResponse)
        /// `/v1` endpoints, run after authentication and the rate limit: the handler decodes the
        /// request (path, query, body: client errors only, no service runs) and returns the call
        /// that runs the service. A decoding error is answered only after the account gate
        /// (`AccountGateStage`).
        case authenticated(@Sendable (RouteRequest) throws -> RouteCall)
    }

    var execution: Execution
    var handler: Handler
    /// Whether the route reads a request body; a body sent to one that does not is refused 413
    /// E010, on its head when it did not arrive with it (`LocifyResponder.admission`).
    var takesBody = false

    /// Whether the route is a `/v1` endpoint, answered only with a valid token; the others are
    /// operational and never draw on any bucket.
    var needsToken: Bool {
        if case .authenticated = handler { return true }
        return false
    }
}

/// What a `/v1` handler's decoding step hands the pipeline: the call that runs the service with
/// the decoded request.
typealias RouteCall = () throws -> RouteAnswer

/// What an authenticated route answers: a response, or a wait (long-poll) that `LocifyResponder`
/// turns into an `HTTPWait`, finishing its every end like any response (headers, metrics, log,
/// and the error mapping of a recheck that throws).
enum RouteAnswer: Sendable {
    case response(HTTPResponse)
    case wait(RouteWait)
}

/// A held request as a route describes it (see `HTTPWait`).
struct RouteWait: Sendable {
    /// Woken when what the request waits for may have happened.
    let waiter: HTTPWaiter
    /// The longest wait.
    let timeout: Duration
    /// The answer when the wait ends without a wake (time out, shutdown).
    let expire: HTTPResponse
    /// Runs on a worker after a wake: the answer, or another wait.
    let recheck: @Sendable () throws -> RouteAnswer
}

/// A request to a `/v1` route whose token was verified, as its handler decodes it: the caller,
/// the path parameters, the query and the JSON body, never the raw HTTP request.
struct RouteRequest {
    private let request: HTTPRequest
    let parameters: PathParameters
    let caller: Caller

    init(_ request: HTTPRequest, parameters: PathParameters, caller: Caller) {
        self.request = request
        self.parameters = parameters
        self.caller = caller
    }

    var userID: String { caller.userID }
    /// The query string's parameters.
    var query: QueryParameters { request.parameters }

    /// The JSON body (E012 for another media type, E001 when empty or malformed).
    func jsonBody() throws(APIError) -> JSONValue {
        try request.jsonBody()
    }

    /// The JSON body when there is one.
    func optionalJSONBody() throws(APIError) -> JSONValue? {
        try request.optionalJSONBody()
    }
}

extension WriteOutcome {
    /// 201 for a created record, 200 for an update or a replay.
    var status: HTTPStatus {
        if case .created = self { return .created }
        return .ok
    }
}

extension Router where Handler == Route {
    /// Adds an operational endpoint, answered without a token, on a worker unless `execution`
    /// says it is cheap and never blocks.
    mutating func addOpen(
        _ method: HTTPMethod, _ pattern: String, execution: Route.Execution = .worker,
        _ handler: @escaping @Sendable (HTTPRequest) throws -> HTTPResponse
    ) {
        add(method, pattern, Route(execution: execution, handler: .open(handler)))
    }

    /// Adds a `/v1` endpoint: `decode` reads the request (its errors are answered after the
    /// account gate), `handle` runs the service with what it read.
    mutating func addAuthenticated<Input>(
        _ method: HTTPMethod, _ pattern: String, takesBody: Bool = false,
        decode: @escaping @Sendable (RouteRequest) throws -> Input,
        handle: @escaping @Sendable (Input, Caller) throws -> HTTPResponse
    ) {
        addAuthenticatedWaiting(method, pattern, takesBody: takesBody, decode: decode) { input, caller in
            .response(try handle(input, caller))
        }
    }

    /// Adds a `/v1` endpoint with nothing to decode.
    mutating func addAuthenticated(
        _ method: HTTPMethod, _ pattern: String, handle: @escaping @Sendable (Caller) throws -> HTTPResponse
    ) {
        addAuthenticated(method, pattern, decode: { _ in () }, handle: { _, caller in try handle(caller) })
    }

    /// Adds a `/v1` endpoint whose requests may wait (long-poll).
    mutating func addAuthenticatedWaiting<Input>(
        _ method: HTTPMethod, _ pattern: String, takesBody: Bool = false, decode: @escaping @Sendable (RouteRequest) throws -> Input,
        handle: @escaping @Sendable (Input, Caller) throws -> RouteAnswer
    ) {
        let handler: @Sendable (RouteRequest) throws -> RouteCall = { request in
            let input = try decode(request)
            let caller = request.caller
            return { try handle(input, caller) }
        }
        add(method, pattern, Route(execution: .worker, handler: .authenticated(handler), takesBody: takesBody))
    }
}
