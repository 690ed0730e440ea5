import HTTPServer

/// What the pipeline learned about a request, for its response headers, metrics and log line.
struct RequestTrace: Sendable {
    /// When the pipeline took the request, on the monotonic clock.
    let started: Duration
    let requestID: String
    /// The metrics label of the method.
    let method: String
    var routePattern = "unmatched"
    var userID: String?
    /// Refused by the per-address bucket of refused requests.
    var addressLimited = false
    /// The request waited (long-poll) before this answer.
    var waited = false

    init(of request: HTTPRequest, at started: Duration) {
        self.started = started
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
