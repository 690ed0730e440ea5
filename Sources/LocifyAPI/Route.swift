import HTTPServer
import Locify

/// One entry of the route table: what handles the request.
struct Route: Sendable {
    enum Handler: Sendable {
        /// Operational endpoints: no token.
        case open(@Sendable (HTTPRequest) throws -> HTTPResponse)
        /// `/v1` endpoints: run after authentication and rate limiting.
        case authenticated(@Sendable (AuthenticatedRequest) throws -> HTTPResponse)
    }

    var handler: Handler
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
        add(method, pattern, Route(handler: .authenticated(handler)))
    }
}
