import HTTPServer
import Locify

/// One entry of the route table: what handles the request.
struct Route: Sendable {
    enum Handler: Sendable {
        /// Operational endpoints: no token.
        case open(@Sendable (HTTPRequest) throws -> HTTPResponse)
        /// `/v1` endpoints: run after authentication and rate limiting; a response, or a wait.
        case authenticated(@Sendable (AuthenticatedRequest) throws -> RouteAnswer)
    }

    var handler: Handler
}

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

/// A request whose token was verified, with its path parameters.
struct AuthenticatedRequest {
    let request: HTTPRequest
    let parameters: PathParameters
    let caller: Caller

    var userID: String { caller.userID }
    var query: QueryParameters { request.parameters }
}

/// A request the API layer refused while decoding it (body, path or query), before any service
/// ran: the responder runs the account gate for it, since no service did, so a revoked token is
/// told 401 rather than 400 (openapi.yaml). Errors a service throws have passed its gate already.
struct DecodingFailure: Error {
    /// What was wrong (an `APIError` or a `LocifyError` of the decoders), answered as usual.
    let error: any Error
}

/// Runs the decoding of a request, marking its failure as a `DecodingFailure`.
func decoding<T>(_ decode: () throws -> T) throws(DecodingFailure) -> T {
    do {
        return try decode()
    } catch {
        throw DecodingFailure(error: error)
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
    /// Adds an operational endpoint, answered without a token.
    mutating func addOpen(_ method: HTTPMethod, _ pattern: String, _ handler: @escaping @Sendable (HTTPRequest) throws -> HTTPResponse) {
        add(method, pattern, Route(handler: .open(handler)))
    }

    /// Adds a `/v1` endpoint, run after authentication and rate limiting.
    mutating func addAuthenticated(
        _ method: HTTPMethod, _ pattern: String, _ handler: @escaping @Sendable (AuthenticatedRequest) throws -> HTTPResponse
    ) {
        add(method, pattern, Route(handler: .authenticated({ request in .response(try handler(request)) })))
    }

    /// Adds a `/v1` endpoint whose requests may wait (long-poll), run after authentication and
    /// rate limiting.
    mutating func addAuthenticatedWaiting(
        _ method: HTTPMethod, _ pattern: String, _ handler: @escaping @Sendable (AuthenticatedRequest) throws -> RouteAnswer
    ) {
        add(method, pattern, Route(handler: .authenticated(handler)))
    }
}
