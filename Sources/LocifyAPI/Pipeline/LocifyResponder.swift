import HTTPServer
import Locify
import Logging
import Primitives

/// The request pipeline of the API: route (404/405 before authentication, openapi.yaml),
/// authenticate `/v1`, rate-limit per user, run the handler, map any error to its API error,
/// then stamp `X-Request-Id`, count the metrics and write the request log line. The steps before
/// the handler also run on the head of a request whose body has not arrived with it
/// (`admitBody`), so a body the request would be refused for is never read, and an admitted body
/// is charged to its user's share of the server's body budget. A handler may answer with a wait
/// (a long-poll pull): its expiry and every recheck are finished like any response.
///
/// Requests refused for routing (404/405) or authentication (401) also draw on a
/// per-client-address bucket: once it is empty they are answered 429 S001 and logged only in a
/// sampled summary, and a token not verified before from that address is answered 429 before its
/// signature is checked, so a flood without a valid token can fill neither the log nor the CPU.
/// Requests with a valid token never draw on it, and one verified before is never refused by it
/// (many users may share one address behind a NAT).
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
    /// Told the user of every write request that succeeded (any `/v1` method but GET and HEAD,
    /// answered 2xx), after its commit: wakes that user's waiting pulls on every instance
    /// (`LiveChanges.changed`); nil when long-poll is off.
    var writeCommitted: (@Sendable (_ userID: String) -> Void)? = nil

    /// Where a request is in the pipeline.
    private enum Stage: Equatable {
        /// Its head, its body not received: the user's bucket is only looked at, and a token that
        /// needs verifying is verified only if `mayBlock` (else the decision moves to a worker).
        case head(mayBlock: Bool)
        /// Complete: the user's bucket is charged.
        case request
    }

    /// The handler a request passed the steps before it for.
    private enum Admitted {
        case open(@Sendable (HTTPRequest) throws -> HTTPResponse)
        case authenticated(@Sendable (AuthenticatedRequest) throws -> RouteAnswer, PathParameters, Caller)
    }

    func executionMode(for request: HTTPRequest) -> HTTPExecutionMode {
        inlinePaths.contains(request.path) ? .inline : .worker
    }

    func respond(to request: HTTPRequest, connection: ConnectionInfo) -> HTTPResponse {
        switch answer(to: request, connection: connection) {
        case .response(let response):
            return response
        case .wait(let wait):
            // Only requests run on workers may wait (no inline route does): answer at once.
            wait.waiter.end()
            return wait.expire()
        }
    }

    func answer(to request: HTTPRequest, connection: ConnectionInfo) -> HTTPAnswer {
        var trace = RequestTrace(of: request)
        let answer: RouteAnswer
        do {
            switch try admission(of: request, connection: connection, stage: .request, trace: &trace) {
            case .open(let handler):
                answer = .response(try handler(request))
            case .authenticated(let handler, let parameters, let caller):
                do {
                    answer = try handler(AuthenticatedRequest(request: request, parameters: parameters, caller: caller))
                } catch let failure as DecodingFailure {
                    // No service ran, so neither did the gate: a revoked token is 401 first.
                    try admit(caller)
                    throw failure.error
                }
            case nil:
                throw APIError.internalError  // unreachable: a complete request may block
            }
        } catch {
            answer = .response(errorResponse(error, userID: trace.userID, requestID: trace.requestID))
        }
        return finish(answer, trace)
    }

    /// Runs the steps before the handler on a request's head: a request that would be refused
    /// (404, 405, 401, 429, 503) is answered now, its body unread; an admitted body is charged
    /// to its user (or, on an open route, to the client's address).
    func admitBody(of head: HTTPRequest, connection: ConnectionInfo, mayBlock: Bool) -> HTTPBodyAdmission {
        var trace = RequestTrace(of: head)
        do {
            guard try admission(of: head, connection: connection, stage: .head(mayBlock: mayBlock), trace: &trace) != nil
            else { return .decideOnWorker }
            return .admit(owner: trace.userID)
        } catch {
            let response = errorResponse(error, userID: trace.userID, requestID: trace.requestID)
            return .refuse(finish(response, trace))
        }
    }

    /// Routing, authentication and the user's rate limit: the handler to run, or nil when the
    /// token must be verified and `stage` does not allow blocking.
    private func admission(
        of request: HTTPRequest, connection: ConnectionInfo, stage: Stage, trace: inout RequestTrace
    ) throws(APIError) -> Admitted? {
        switch router.match(request.method, path: request.path) {
        case .notFound:
            try chargeRefusal(connection, trace: &trace)
            throw .routeNotFound
        case .methodNotAllowed(let allowed):
            if !OperationsRoutes.paths.contains(request.path) { try chargeRefusal(connection, trace: &trace) }
            throw .methodNotAllowed(allowed)
        case .found(let route, let parameters, let pattern):
            trace.routePattern = pattern
            switch route.handler {
            case .open(let handler):
                return .open(handler)
            case .authenticated(let handler):
                let mayBlock = if case .head(let mayBlock) = stage { mayBlock } else { true }
                guard
                    let caller = try authenticate(request, connection: connection, mayBlock: mayBlock, trace: &trace)
                else { return nil }
                trace.userID = caller.userID
                let retryAfter = stage == .request ? rateLimiter?.admit(caller.userID) : rateLimiter?.retryAfter(caller.userID)
                if let retryAfter { throw .rateLimited(retryAfterSeconds: retryAfter) }
                return .authenticated(handler, parameters, caller)
            }
        }
    }

    /// The caller of a request to an authenticated route. A token verified before is taken at
    /// once; another is verified only while the client's address has refusals left in its bucket
    /// (else 429 before any signature check) and only where blocking is allowed (else nil). A
    /// refusal (401) draws on the address's bucket.
    private func authenticate(
        _ request: HTTPRequest, connection: ConnectionInfo, mayBlock: Bool, trace: inout RequestTrace
    ) throws(APIError) -> Caller? {
        let requestID = trace.requestID
        do throws(APIError) {
            let token = try authenticator.token(of: request, requestID: requestID)
            if let caller = try authenticator.cachedCaller(token, requestID: requestID) { return caller }
            if let retryAfter = addressLimiter?.retryAfter(connection.clientAddress) {
                trace.addressLimited = true
                throw .rateLimited(retryAfterSeconds: retryAfter)
            }
            guard mayBlock else { return nil }
            return try authenticator.verify(token, requestID: requestID)
        } catch {
            if error.status == .unauthorized { try chargeRefusal(connection, trace: &trace) }
            throw error
        }
    }

    /// Charges a refused request to its client address; once the address has no tokens left,
    /// throws the 429 S001 to answer instead.
    private func chargeRefusal(_ connection: ConnectionInfo, trace: inout RequestTrace) throws(APIError) {
        guard let retryAfter = addressLimiter?.admit(connection.clientAddress) else { return }
        trace.addressLimited = true
        throw .rateLimited(retryAfterSeconds: retryAfter)
    }

    /// Finishes a route's answer: a response at once, or a wait whose every end (its expiry, or a
    /// recheck's response or error) is finished the same way.
    fileprivate func finish(_ answer: RouteAnswer, _ trace: RequestTrace) -> HTTPAnswer {
        switch answer {
        case .response(let response):
            return .response(finish(response, trace))
        case .wait(let wait):
            let ending = WaitEnding(responder: self, wait: wait, trace: trace.afterWaiting)
            return .wait(HTTPWait(waiter: wait.waiter, timeout: wait.timeout, expire: ending.expire, recheck: ending.recheck))
        }
    }

    /// Stamps `X-Request-Id` and the hardening headers, counts the metrics and writes the log line.
    fileprivate func finish(_ response: HTTPResponse, _ trace: RequestTrace) -> HTTPResponse {
        var response = response
        response.headers.set("X-Request-Id", trace.requestID)
        Self.harden(&response)
        if let userID = trace.userID, let writeCommitted, (200..<300).contains(response.status.code),
            trace.method != "GET" && trace.method != "HEAD"
        {
            writeCommitted(userID)
        }
        let elapsed = ContinuousClock.now - trace.started
        // A request that waited took as long as its client asked: kept out of the latency histogram.
        metrics.record(
            method: trace.method, route: trace.routePattern, status: response.status.code,
            seconds: trace.waited ? nil : elapsed.seconds)
        let refused = trace.addressLimited || [401, 404, 405].contains(response.status.code)
        if refused && (trace.addressLimited || refusedLogLines?.admit("") != nil) {
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
                "request_id": .string(trace.requestID), "method": .string(trace.method), "route": .string(trace.routePattern),
                "status": .stringConvertible(response.status.code),
                "duration_ms": .stringConvertible(elapsed.fractionalMilliseconds), "user_id": .string(trace.userID ?? ""),
            ])
        return response
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

    fileprivate func errorResponse(_ error: any Error, userID: String?, requestID: String) -> HTTPResponse {
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

/// What the pipeline learned about a request, for its response headers, metrics and log line.
private struct RequestTrace: Sendable {
    let started: ContinuousClock.Instant
    let requestID: String
    /// The metrics label of the method.
    let method: String
    var routePattern = "unmatched"
    var userID: String?
    /// Refused by the per-address bucket of refused requests.
    var addressLimited = false
    /// The request waited (long-poll) before this answer.
    var waited = false

    init(of request: HTTPRequest) {
        started = ContinuousClock.now
        requestID = RequestID.forRequest(clientValue: request.headers["X-Request-Id"])
        method = Metrics.methodLabel(request.method.rawValue)
    }

    /// The same request, answered after a wait.
    var afterWaiting: RequestTrace {
        var trace = self
        trace.waited = true
        return trace
    }
}

/// The two ends of a held request (`HTTPWait.expire` and `recheck`), finished like every response:
/// one object per waiting request, shared by both closures, so that thousands of waiting clients
/// do not each keep two copies of the responder.
private final class WaitEnding: Sendable {
    let responder: LocifyResponder
    let wait: RouteWait
    let trace: RequestTrace

    init(responder: LocifyResponder, wait: RouteWait, trace: RequestTrace) {
        self.responder = responder
        self.wait = wait
        self.trace = trace
    }

    @Sendable func expire() -> HTTPResponse {
        responder.finish(wait.expire, trace)
    }

    @Sendable func recheck() -> HTTPAnswer {
        let next: RouteAnswer
        do {
            next = try wait.recheck()
        } catch {
            next = .response(responder.errorResponse(error, userID: trace.userID, requestID: trace.requestID))
        }
        return responder.finish(next, trace)
    }
}
