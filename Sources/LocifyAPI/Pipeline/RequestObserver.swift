import HTTPServer
import Logging
import Primitives

/// The observe stage of the pipeline, the last: counts the metrics of an answered request, writes
/// its log line (refused ones only in a sampled summary past a rate). (Waiting pulls learn of
/// commits from the domain, `Accounts`, not from answers.)
struct RequestObserver: Sendable {
    let metrics: Metrics
    /// The monotonic clock request durations are measured with.
    let clock: MonotonicClock
    let logger: Logger
    /// How many refused requests (401/404/405) per second get their own log line, whatever their
    /// addresses (a flood from many addresses stays within each address's bucket).
    let refusedLogLines: RateLimiter?
    /// Summarises the refused requests not logged one by one, at most one line per interval.
    let floodLog: SampledLog

    /// Records the answer `response` of the request `trace` describes.
    func observe(_ response: HTTPResponse, _ trace: RequestTrace) {
        let elapsed = clock.now() - trace.started
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
            return
        }
        logger.info(
            "request",
            metadata: [
                "request_id": .string(trace.requestID), "method": .string(trace.method), "route": .string(trace.routePattern),
                "status": .stringConvertible(response.status.code),
                "duration_ms": .stringConvertible(elapsed.fractionalMilliseconds), "user_id": .string(trace.userID ?? ""),
            ])
    }
}
