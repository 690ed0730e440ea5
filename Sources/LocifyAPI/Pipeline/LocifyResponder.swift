import HTTPServer
import Locify
import Primitives

/// The request pipeline of the API, in named stages: route (404/405 before authentication,
/// openapi.yaml) → refused-request limiter (`RefusalLimiter`) → authenticate (`Authenticator`,
/// `/v1` only) → rate limit (per user) → account gate (`AccountGateStage`, for a request its
/// handler could not decode) → handle (the route's service call) → render (`ResponseRenderer`:
/// errors to API errors, `X-Request-Id`, hardening headers) → observe (`RequestObserver`: metrics,
/// the log line). What the stages need to know of a route before running it
/// (inline or worker, needs a token) is on its `Route`.
///
/// The stages up to the rate limit also run on the head of a request whose body has not arrived
/// with it (`admitBody`), so a body the request would be refused for is never read, and an
/// admitted body is charged to its user's share of the server's body budget. A handler may
/// answer with a wait (a long-poll pull): its expiry and every recheck are rendered and observed
/// like any response.
struct LocifyResponder: HTTPResponder {
    let router: Router<Route>
    let refusals: RefusalLimiter
    let authenticator: Authenticator
    /// The per-user bucket; nil when disabled.
    let rateLimiter: RateLimiter?
    let gate: AccountGateStage
    let renderer: ResponseRenderer
    let observer: RequestObserver
    /// The paths of the inline routes, from the route table: a set lookup, so the table is
    /// searched once per request, in `respond` (inline routes have literal patterns).
    private let inlinePaths: Set<String>
    /// The paths of the routes without a token (operational): never charged to the refused-request
    /// limiter, not even for a wrong method.
    private let openPaths: Set<String>

    init(
        router: Router<Route>, refusals: RefusalLimiter, authenticator: Authenticator, rateLimiter: RateLimiter?,
        gate: AccountGateStage, renderer: ResponseRenderer, observer: RequestObserver
    ) {
        self.router = router
        self.refusals = refusals
        self.authenticator = authenticator
        self.rateLimiter = rateLimiter
        self.gate = gate
        self.renderer = renderer
        self.observer = observer
        let entries = router.entries
        inlinePaths = Set(entries.filter { $0.handler.execution == .inline }.map(\.pattern))
        openPaths = Set(entries.filter { !$0.handler.needsToken }.map(\.pattern))
    }

    /// Where a request is in the pipeline.
    private enum Stage: Equatable {
        /// Its head, its body not received: the user's bucket is only looked at, and a token that
        /// needs verifying is verified only if `mayBlock` (else the decision moves to a worker).
        case head(mayBlock: Bool)
        /// Complete: the user's bucket is charged.
        case request
    }

    /// The handler a request passed the stages before it for.
    private enum Admitted {
        case open(@Sendable (HTTPRequest) throws -> HTTPResponse)
        case authenticated(@Sendable (RouteRequest) throws -> RouteCall, PathParameters, Caller)
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
        var trace = RequestTrace(of: request, at: observer.clock.now())
        let answer: RouteAnswer
        do {
            switch try admission(of: request, connection: connection, stage: .request, trace: &trace) {
            case .open(let handler):
                answer = .response(try handler(request))
            case .authenticated(let handler, let parameters, let caller):
                let call = try gate.decode(RouteRequest(request, parameters: parameters, caller: caller), with: handler)
                answer = try call()
            case nil:
                throw APIError.internalError  // unreachable: a complete request may block
            }
        } catch {
            answer = .response(renderer.response(for: error, userID: trace.userID, requestID: trace.requestID))
        }
        return finish(answer, trace)
    }

    /// Runs the stages before the handler on a request's head: a request that would be refused
    /// (404, 405, 401, 429, 503) is answered now, its body unread; an admitted body is charged
    /// to its user (or, on an open route, to the client's address).
    func admitBody(of head: HTTPRequest, connection: ConnectionInfo, mayBlock: Bool) -> HTTPBodyAdmission {
        var trace = RequestTrace(of: head, at: observer.clock.now())
        do {
            guard try admission(of: head, connection: connection, stage: .head(mayBlock: mayBlock), trace: &trace) != nil
            else { return .decideOnWorker }
            return .admit(owner: trace.userID)
        } catch {
            let response = renderer.response(for: error, userID: trace.userID, requestID: trace.requestID)
            return .refuse(finish(response, trace))
        }
    }

    func response(for error: HTTPRequestError) -> HTTPResponse {
        renderer.response(for: error)
    }

    /// Route, refused-request limiter, authentication, the user's rate limit and the body: the
    /// handler to run, or nil when the token must be verified and `stage` does not allow blocking.
    /// A body sent to a route that reads none is refused (413 E010) after authentication (401
    /// comes first), on the head when the body did not arrive with it: nobody holds the server's
    /// body budget with bodies nothing reads.
    private func admission(
        of request: HTTPRequest, connection: ConnectionInfo, stage: Stage, trace: inout RequestTrace
    ) throws(APIError) -> Admitted? {
        let (route, parameters) = try self.route(request, connection: connection, trace: &trace)
        let hasBody = if case .head = stage { true } else { !request.body.isEmpty }
        switch route.handler {
        case .open(let handler):
            if hasBody && !route.takesBody { throw .bodyTooLarge }
            return .open(handler)
        case .authenticated(let handler):
            let mayBlock = if case .head(let mayBlock) = stage { mayBlock } else { true }
            guard let caller = try authenticate(request, connection: connection, mayBlock: mayBlock, trace: &trace)
            else { return nil }
            trace.userID = caller.userID
            let retryAfter = stage == .request ? rateLimiter?.admit(caller.userID) : rateLimiter?.retryAfter(caller.userID)
            if let retryAfter { throw .rateLimited(retryAfterSeconds: retryAfter) }
            if hasBody && !route.takesBody { throw .bodyTooLarge }
            return .authenticated(handler, parameters, caller)
        }
    }

    /// The route of a request; a refusal (404, or 405 on a `/v1` path) is charged to the
    /// refused-request limiter.
    private func route(
        _ request: HTTPRequest, connection: ConnectionInfo, trace: inout RequestTrace
    ) throws(APIError) -> (Route, PathParameters) {
        switch router.match(request.method, path: request.path) {
        case .notFound:
            try refusals.charge(connection, trace: &trace)
            throw .routeNotFound
        case .methodNotAllowed(let allowed):
            if !openPaths.contains(request.path) { try refusals.charge(connection, trace: &trace) }
            throw .methodNotAllowed(allowed)
        case .found(let route, let parameters, let pattern):
            trace.routePattern = pattern
            return (route, parameters)
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
            try refusals.checkBeforeVerifying(connection, trace: &trace)
            guard mayBlock else { return nil }
            return try authenticator.verify(token, requestID: requestID)
        } catch {
            if error.status == .unauthorized { try refusals.charge(connection, trace: &trace) }
            throw error
        }
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

    /// The render and observe stages of an answered request.
    fileprivate func finish(_ response: HTTPResponse, _ trace: RequestTrace) -> HTTPResponse {
        var response = response
        renderer.stamp(&response, requestID: trace.requestID)
        observer.observe(response, trace)
        return response
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
            next = .response(responder.renderer.response(for: error, userID: trace.userID, requestID: trace.requestID))
        }
        return responder.finish(next, trace)
    }
}
