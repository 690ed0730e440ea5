import HTTPClient
import JSON
import LocifyRules
import Primitives

/// Deletes Firebase Auth accounts through the Identity Toolkit API (openapi.yaml, `DELETE /v1/users/me`). One attempt
/// per call; the caller owns retries.
public struct IdentityToolkitClient: Sendable {
    /// Google's Identity Toolkit endpoint.
    public static let defaultBaseURL = "https://identitytoolkit.googleapis.com"

    /// API base URL without a trailing slash (`LOCIFY_IDENTITY_API_URL`, default Google's).
    public var baseURL: String
    /// The transport requests go through.
    public var transport: any HTTPTransport
    /// Where the bearer token comes from.
    public var tokens: any AccessTokenSource
    /// Per-request timeout in seconds (default 10 s).
    public var timeout: Double
    /// The wall clock an HTTP-date `Retry-After` counts from.
    public var clock: WallClock

    /// A client of the Identity Toolkit API at `baseURL`, authenticated by `tokens`.
    public init(
        baseURL: String = IdentityToolkitClient.defaultBaseURL, transport: any HTTPTransport,
        tokens: any AccessTokenSource, timeout: Double = 10, clock: WallClock = .system
    ) {
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.transport = transport
        self.tokens = tokens
        self.timeout = timeout
        self.clock = clock
    }

    /// A client for the Auth emulator at `host:port` (`FIREBASE_AUTH_EMULATOR_HOST`):
    /// `http://<host>/identitytoolkit.googleapis.com` with `Authorization: Bearer owner`.
    public static func emulator(host: String, transport: any HTTPTransport, clock: WallClock = .system) -> IdentityToolkitClient {
        let root = host.contains("://") ? host : "http://" + host
        return IdentityToolkitClient(
            baseURL: root + "/identitytoolkit.googleapis.com", transport: transport, tokens: StaticAccessToken("owner"),
            clock: clock)
    }

    /// Deletes the account `uid` of `projectId`; an account that does not exist counts as deleted.
    public func deleteAccount(projectId: String, uid: String) throws(GoogleAPIError) {
        let url = baseURL + "/v1/projects/" + PercentEncoding.encodeComponent(projectId) + "/accounts:delete"
        var body = JSONWriter()
        body.object { writer in
            writer.key("localId")
            writer.string(uid)
        }
        let token: String
        do {
            token = try tokens.accessToken()
        } catch {
            throw GoogleAPIError.accessToken(error)
        }
        let request = TransportRequest(
            method: "POST", url: url,
            headers: [
                ("Content-Type", "application/json"), ("Accept", "application/json"), ("Authorization", "Bearer " + token),
            ],
            body: body.bytes, timeout: timeout)
        let response: TransportResponse
        do {
            response = try transport.send(request)
        } catch {
            throw GoogleAPIError.transport(error)
        }
        if (200...299).contains(response.status) { return }
        if let message = GoogleResponse.message(in: response.body), Self.isUserNotFound(message) { return }
        throw GoogleResponse.error(from: response, now: clock.seconds())
    }

    /// Whether Google's message means the account is already gone (`USER_NOT_FOUND`, possibly
    /// followed by ` : detail`).
    static func isUserNotFound(_ message: String) -> Bool {
        guard message.hasPrefix("USER_NOT_FOUND") else { return false }
        let rest = message.dropFirst("USER_NOT_FOUND".count)
        return rest.isEmpty || rest.first == " " || rest.first == ":"
    }
}
