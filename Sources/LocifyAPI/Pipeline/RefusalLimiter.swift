import HTTPServer

/// The refused-request limiter, the pipeline's stage after routing: requests refused for routing
/// (404/405) or authentication (401) draw on a bucket per client address; once it is empty they
/// are answered 429 S001 (and logged only in a sampled summary), and a token not verified before
/// from that address is answered 429 before its signature is checked, so a flood without a valid
/// token can fill neither the log nor the CPU. Requests with a valid token never draw on it, and
/// one verified before is never refused by it (many users may share one address behind a NAT).
struct RefusalLimiter: Sendable {
    /// The buckets, per client address; nil when the limiter is off.
    let buckets: RateLimiter?

    /// Charges a refused request to its client address; once the address has no tokens left,
    /// throws the 429 S001 to answer instead.
    func charge(_ connection: ConnectionInfo, trace: inout RequestTrace) throws(APIError) {
        guard let retryAfter = buckets?.admit(connection.clientAddress) else { return }
        trace.addressLimited = true
        throw .rateLimited(retryAfterSeconds: retryAfter)
    }

    /// Before verifying a token not seen before: 429 S001 when the address has no refusals left.
    func checkBeforeVerifying(_ connection: ConnectionInfo, trace: inout RequestTrace) throws(APIError) {
        guard let retryAfter = buckets?.retryAfter(connection.clientAddress) else { return }
        trace.addressLimited = true
        throw .rateLimited(retryAfterSeconds: retryAfter)
    }
}
