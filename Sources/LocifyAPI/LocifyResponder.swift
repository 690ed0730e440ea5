import HTTPServer
import Locify
import Logging
import Primitives

/// The request pipeline of the API: route (404/405 before authentication, openapi.yaml),
/// authenticate `/v1`, rate-limit per user, run the handler, map any error to its API error,
/// then stamp `X-Request-Id`, count the metrics and write the request log line. Requests refused
/// for routing (404/405) or authentication (401) also draw on a per-client-address bucket: once
/// it is empty they are answered 429 S001 and logged only in a sampled summary, so a flood without
/// a valid token can fill neither the log nor the CPU; requests with a valid token never draw on
/// it (many users may share one address behind a NAT).
struct LocifyResponder: HTTPResponder {
    let router: Router<Route>
    let authenticator: Authenticator
    let rateLimiter: RateLimiter?
    /// The per-client-address bucket of refused requests; nil when disabled.
    let addressLimiter: RateLimiter?
    /// How many refused requests (401/404/405) per second get their own log line, whatever their
    /// addresses (a flood from many addresses stays within each address's bucket).
    let refusedLogLines: RateLimiter?
    /// Summarises the refused requests not logged one by one, at most one line per interval.
    let floodLog: SampledLog
    /// The account gate (provisioning, revoked tokens), run when a request fails decoding in the
    /// API layer (`DecodingFailure`) before reaching a service, so a revoked token is told 401
    /// rather than 400; errors thrown by a service come after its own gate.
    let admit: @Sendable (Caller) throws -> Void
    /// The paths whose routes are cheap and non-blocking, answered on the I/O thread; a set
    /// lookup, so the route table is searched once per request, in `respond`.
    let inlinePaths: Set<String>
    let metrics: Metrics
    let logger: Logger

    func executionMode(for request: HTTPRequest) -> HTTPExecutionMode {
        inlinePaths.contains(request.path) ? .inline : .worker
    }

    func respond(to request: HTTPRequest, connection: ConnectionInfo) -> HTTPResponse {
        let started = ContinuousClock.now
        let requestID = RequestID.forRequest(clientValue: request.headers["X-Request-Id"])
        var routePattern = "unmatched"
        var userID: String?
        var response: HTTPResponse
        var addressLimited = false
        do {
            switch router.match(request.method, path: request.path) {
            case .notFound:
                if let limited = chargeAddress(connection) {
                    addressLimited = true
                    throw limited
                }
                throw APIError.routeNotFound
            case .methodNotAllowed(let allowed):
                if !OperationsRoutes.paths.contains(request.path), let limited = chargeAddress(connection) {
                    addressLimited = true
                    throw limited
                }
                throw APIError.methodNotAllowed(allowed)
            case .found(let route, let parameters, let pattern):
                routePattern = pattern
                switch route.handler {
                case .open(let handler):
                    response = try handler(request)
                case .authenticated(let handler):
                    let authentication = Result { () throws(APIError) in
                        try authenticator.authenticate(request, requestID: requestID)
                    }
                    if case .failure(let refusal) = authentication, refusal.status == .unauthorized,
                        let limited = chargeAddress(connection)
                    {
                        addressLimited = true
                        throw limited
                    }
                    let caller = try authentication.get()
                    userID = caller.userID
                    if let retryAfter = rateLimiter?.admit(caller.userID) {
                        throw APIError.rateLimited(retryAfterSeconds: retryAfter)
                    }
                    do {
                        response = try handler(AuthenticatedRequest(request: request, parameters: parameters, caller: caller))
                    } catch let failure as DecodingFailure {
                        // No service ran, so neither did the gate: a revoked token is 401 first.
                        try admit(caller)
                        throw failure.error
                    }
                }
            }
        } catch {
            response = errorResponse(error, userID: userID, requestID: requestID)
        }
        response.headers.set("X-Request-Id", requestID)
        Self.harden(&response)
        let elapsed = ContinuousClock.now - started
        let method = Metrics.methodLabel(request.method.rawValue)
        metrics.record(method: method, route: routePattern, status: response.status.code, seconds: elapsed.seconds)
        let refused = addressLimited || [401, 404, 405].contains(response.status.code)
        if refused && (addressLimited || refusedLogLines?.admit("") != nil) {
            floodLog.note { count, seconds in
                logger.warning(
                    "refused requests (401, 404, 405, or 429 past the per-address limit) not logged one by one",
                    metadata: ["count": .stringConvertible(count), "seconds": .stringConvertible(seconds)])
            }
            return response
        }
        logger.info(
            "request",
            metadata: [
                "request_id": .string(requestID), "method": .string(method), "route": .string(routePattern),
                "status": .stringConvertible(response.status.code), "duration_ms": .stringConvertible(elapsed.fractionalMilliseconds),
                "user_id": .string(userID ?? ""),
            ])
        return response
    }

    /// Charges a refused request to its client address: nil while the address has tokens left,
    /// then the 429 S001 to answer instead.
    private func chargeAddress(_ connection: ConnectionInfo) -> APIError? {
        guard let retryAfter = addressLimiter?.admit(ClientAddress.key(connection.remoteAddress)) else { return nil }
        return APIError.rateLimited(retryAfterSeconds: retryAfter)
    }

    /// Errors the HTTP layer detects before a request exists: the two of the API's table as JSON,
    /// malformed HTTP as plain text. Every response carries a fresh `X-Request-Id` (openapi.yaml).
    func response(for error: HTTPRequestError) -> HTTPResponse {
        var response: HTTPResponse
        if let apiError = APIError(error) {
            response = HTTPResponse.json(apiError.status, apiError.encodedBody(userID: nil))
            for (name, value) in apiError.headers { response.headers.add(name, value) }
        } else {
            response = HTTPResponse(
                status: error.status, headers: ["Content-Type": "text/plain; charset=utf-8"],
                body: Array("\(error.status.code) \(error.status.reasonPhrase)\n".utf8))
        }
        response.headers.set("X-Request-Id", RequestID.forRequest(clientValue: nil))
        Self.harden(&response)
        return response
    }

    /// Headers every response carries (OWASP API8): clients must not sniff another media type
    /// from the body, and no cache may keep a response, which may hold a user's records.
    static func harden(_ response: inout HTTPResponse) {
        response.headers.set("X-Content-Type-Options", "nosniff")
        response.headers.set("Cache-Control", "no-store")
    }

    private func errorResponse(_ error: any Error, userID: String?, requestID: String) -> HTTPResponse {
        let apiError: APIError
        if let mapped = APIError.mapping(error) {
            apiError = mapped
        } else {
            logger.error(
                "unexpected error", metadata: ["request_id": "\(requestID)", "error": "\(String(reflecting: error))"])
            apiError = .internalError
        }
        var response = HTTPResponse.json(apiError.status, apiError.encodedBody(userID: userID))
        for (name, value) in apiError.headers { response.headers.add(name, value) }
        return response
    }
}
