import FirebaseAdmin
import HTTPServer
import Locify
import Logging

/// The authentication step of every `/v1` request (openapi.yaml): a `Bearer` ID token
/// (scheme case-insensitive) verified by the Firebase rules. Every refusal looks the same to the
/// client (401 E005); the reason goes to the log. In three steps, so that the cheap ones can run
/// on a request's head on an I/O thread: the token of the header, a token verified before (a
/// hash and a cache lookup), the full verification (a signature, maybe a wait for Google's keys).
struct Authenticator: Sendable {
    let verifier: IDTokenVerifier
    /// The configured clock skew, seconds: a token is revoked by an account deletion when its
    /// `iat <= deletion second + skew`, since Google's clock may run ahead of the database's by
    /// that much (a token issued just before the deletion may carry a later `iat`).
    let revocationSkewSeconds: Int
    let logger: Logger

    /// The token of the request's single `Authorization: Bearer` field; 401 when there is none.
    func token(of request: HTTPRequest, requestID: String) throws(APIError) -> String {
        let values = request.headers.values(for: "Authorization")
        guard let header = values.first else { throw .unauthenticated(credentialsSent: false) }
        guard values.count == 1, let token = Self.bearerToken(header) else {
            logger.debug("refused credentials: not a single Bearer token", metadata: ["request_id": "\(requestID)"])
            throw .unauthenticated(credentialsSent: true)
        }
        return token
    }

    /// The caller of a token verified before and still valid; nil when it must be verified.
    /// Never blocks.
    func cachedCaller(_ token: String, requestID: String) throws(APIError) -> Caller? {
        do {
            return try verifier.cachedVerification(of: token).map(caller)
        } catch {
            throw refusal(error, requestID: requestID)
        }
    }

    /// Verifies `token` (a cache hit, or the full check, which may wait for Google's keys).
    func verify(_ token: String, requestID: String) throws(APIError) -> Caller {
        do {
            return caller(try verifier.verify(token))
        } catch {
            throw refusal(error, requestID: requestID)
        }
    }

    /// The gate refuses `tokenIssuedAt <= deletion second`: passing `iat - skew` refuses
    /// `iat <= deletion second + skew` (the earliest issue time on the server's clock).
    private func caller(_ verified: VerifiedIDToken) -> Caller {
        Caller(
            userID: verified.uid, email: verified.email, name: verified.name,
            tokenIssuedAt: verified.issuedAt - Int64(revocationSkewSeconds))
    }

    /// Logs why a token was refused and maps the error.
    private func refusal(_ error: IDTokenError, requestID: String) -> APIError {
        switch error {
        case .invalid(let reason):
            // Debug, not info: a flood of forged tokens must not fill the disk (the request
            // line of each refusal is logged, and bounded by the per-address limit).
            logger.debug("refused ID token", metadata: ["request_id": "\(requestID)", "reason": "\(reason)"])
        case .keysUnavailable(let reason):
            logger.error("cannot verify ID tokens", metadata: ["request_id": "\(requestID)", "reason": "\(reason)"])
        }
        return APIError(error)
    }

    /// The token of `Bearer <token>` (RFC 6750 section 2.1; the scheme in any letter case, one
    /// space, then a token without spaces).
    static func bearerToken(_ header: String) -> String? {
        var header = header
        return header.withUTF8 { bytes in
            var end = bytes.count
            while end > 0, bytes[end - 1] == UInt8(ascii: " ") || bytes[end - 1] == UInt8(ascii: "\t") { end -= 1 }
            guard end > 7, bytes[6] == UInt8(ascii: " ") else { return nil }
            for (index, expected) in "bearer".utf8.enumerated() where HTTPText.lowercased(bytes[index]) != expected {
                return nil
            }
            for index in 7..<end where bytes[index] == UInt8(ascii: " ") || bytes[index] == UInt8(ascii: "\t") {
                return nil
            }
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[7..<end]), as: UTF8.self)
        }
    }
}
