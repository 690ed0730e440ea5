import FirebaseAdmin
import HTTPServer
import Locify
import Logging

/// The authentication step of every `/v1` request (API.md section 2): a `Bearer` ID token
/// (scheme case-insensitive) verified by the Firebase rules. Every refusal looks the same to the
/// client (401 E005); the reason goes to the log.
struct Authenticator: Sendable {
    let verifier: IDTokenVerifier
    let logger: Logger

    func authenticate(_ request: HTTPRequest, requestID: String) throws(APIError) -> Caller {
        let values = request.headers.values(for: "Authorization")
        guard let header = values.first else { throw .unauthenticated(credentialsSent: false) }
        guard values.count == 1, let token = Self.bearerToken(header) else {
            logger.debug("refused credentials: not a single Bearer token", metadata: ["request_id": "\(requestID)"])
            throw .unauthenticated(credentialsSent: true)
        }
        do {
            let verified = try verifier.verify(token)
            return Caller(userID: verified.uid, email: verified.email, name: verified.name, tokenIssuedAt: verified.issuedAt)
        } catch {
            switch error {
            case .invalid(let reason):
                logger.info("refused ID token", metadata: ["request_id": "\(requestID)", "reason": "\(reason)"])
                throw .unauthenticated(credentialsSent: true)
            case .keysUnavailable(let reason):
                logger.error("cannot verify ID tokens", metadata: ["request_id": "\(requestID)", "reason": "\(reason)"])
                throw .unavailable("cannot verify tokens right now, retry later")
            }
        }
    }

    /// The token of `Bearer <token>` (RFC 6750 section 2.1; the scheme in any letter case).
    static func bearerToken(_ header: String) -> String? {
        let utf8 = Array(header.utf8)
        guard utf8.count > 7, utf8[6] == UInt8(ascii: " "),
            String(decoding: utf8[0..<6], as: UTF8.self).lowercased() == "bearer"
        else { return nil }
        let token = String(decoding: utf8[7...], as: UTF8.self).trimmingSpaces()
        return token.isEmpty || token.contains(" ") ? nil : token
    }
}

extension String {
    /// Without leading and trailing spaces and tabs.
    func trimmingSpaces() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first == " " || first == "\t" { scalars.removeFirst() }
        while let last = scalars.last, last == " " || last == "\t" { scalars.removeLast() }
        return String(scalars)
    }
}
