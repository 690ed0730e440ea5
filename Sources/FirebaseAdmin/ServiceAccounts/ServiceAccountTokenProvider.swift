import FoundationEssentials
import HTTPClient
import JSON
import LocifyRules
import Logging
import Primitives
import Synchronization

/// Obtains access tokens with the JWT-bearer grant (Google's OAuth 2.0 service-account flow): an RS256 assertion signed with
/// the service account's key is exchanged at its `token_uri`; the token is reused until about
/// four minutes before it expires.
public final class ServiceAccountTokenProvider: AccessTokenSource {
    /// The OAuth scope requested: enough for Cloud Storage and Identity Toolkit.
    public static let scope = "https://www.googleapis.com/auth/cloud-platform"
    /// Seconds before expiry at which a cached token is renewed (240 s).
    public static let renewalMargin: Double = 240
    /// Longest lifetime taken from the token endpoint's `expires_in` (a day; Google gives an hour).
    public static let maximumLifetime: Double = 86_400

    private struct CachedToken {
        var token: String
        var expiresAt: Double
    }

    private let account: ServiceAccount
    private let signingKey: RSAPrivateKey
    private let transport: any HTTPTransport
    private let timeout: Double
    private let clock: WallClock
    private let logger: Logger
    private let cached = Mutex<CachedToken?>(nil)
    /// Serialises token requests so concurrent callers share one exchange.
    private let exchangeLock = Mutex(())

    /// A provider for `account`; fails when its private key cannot be read. `timeout` in seconds (default 10 s).
    public init(
        account: ServiceAccount, transport: any HTTPTransport, timeout: Double = 10,
        clock: WallClock = .system, logger: Logger
    ) throws(CryptoKeyError) {
        self.account = account
        self.signingKey = try RSAPrivateKey(pem: account.privateKey)
        self.transport = transport
        self.timeout = timeout
        self.clock = clock
        self.logger = logger
    }

    /// A valid access token, from the cache or a new exchange. Throws a retryable `GoogleAPIError`.
    public func accessToken() throws -> String {
        if let token = currentToken() { return token }
        return try exchangeLock.withLock { _ throws(GoogleAPIError) -> String in
            if let token = currentToken() { return token }
            let (token, lifetime) = try exchange()
            let expiresAt = clock.seconds() + lifetime
            cached.withLock { $0 = CachedToken(token: token, expiresAt: expiresAt) }
            logger.debug("obtained a Google access token", metadata: ["expires_in": "\(Int(lifetime))"])
            return token
        }
    }

    private func currentToken() -> String? {
        let time = clock.seconds()
        return cached.withLock { cached in
            guard let cached, time < cached.expiresAt - Self.renewalMargin else { return nil }
            return cached.token
        }
    }

    /// The signed assertion for the current time.
    func makeAssertion() throws(GoogleAPIError) -> String {
        let issuedAt = Int64(clock.seconds().rounded(.down)) - 10
        var header = JSONWriter()
        header.object { writer in
            writer.key("alg")
            writer.string("RS256")
            writer.key("typ")
            writer.string("JWT")
            writer.key("kid")
            writer.string(account.privateKeyId)
        }
        var claims = JSONWriter()
        claims.object { writer in
            writer.key("iss")
            writer.string(account.clientEmail)
            writer.key("scope")
            writer.string(Self.scope)
            writer.key("aud")
            writer.string(account.tokenURI)
            writer.key("iat")
            writer.int64(issuedAt)
            writer.key("exp")
            writer.int64(issuedAt + 3600)
        }
        let signingInput = Base64URL.encode(header.bytes) + "." + Base64URL.encode(claims.bytes)
        do {
            let signature = try signingKey.sign(Array(signingInput.utf8))
            return signingInput + "." + Base64URL.encode(signature)
        } catch {
            throw GoogleAPIError(status: nil, message: "cannot sign the assertion: \(error)", retryable: true)
        }
    }

    private func exchange() throws(GoogleAPIError) -> (token: String, lifetime: Double) {
        let assertion = try makeAssertion()
        let body =
            "grant_type=" + PercentEncoding.encodeComponent("urn:ietf:params:oauth:grant-type:jwt-bearer")
            + "&assertion=" + PercentEncoding.encodeComponent(assertion)
        let request = TransportRequest(
            method: "POST", url: account.tokenURI,
            headers: [("Content-Type", "application/x-www-form-urlencoded"), ("Accept", "application/json")],
            body: Array(body.utf8), timeout: timeout)
        let response: TransportResponse
        do {
            response = try transport.send(request)
        } catch {
            throw GoogleAPIError.accessToken(error)
        }
        guard response.status == 200 else {
            var error = GoogleResponse.error(from: response, now: clock.seconds())
            error.retryable = true
            error.message = "token endpoint: " + error.message
            logger.warning("Google token endpoint refused the assertion", metadata: ["error": "\(error)"])
            throw error
        }
        guard let document = try? JSONParser.parse(response.body), let object = document.objectValue,
            let token = object["access_token"]?.stringValue, !token.isEmpty
        else {
            throw GoogleAPIError(status: 200, message: "token endpoint answered without access_token", retryable: true)
        }
        // Google's answer is bounded before use: a huge `expires_in` would keep a token for ever
        // (and trap where it is turned into an Int).
        let lifetime = object["expires_in"]?.numberValue ?? 3600
        return (token, min(max(0, lifetime), Self.maximumLifetime))
    }
}
