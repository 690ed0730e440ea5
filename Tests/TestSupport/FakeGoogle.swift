import FirebaseAdmin
import Foundation
import JSON
import LocifyRules
import Primitives
import Synchronization

/// An in-process fake of the Google endpoints the server calls, independent of any transport:
/// `handle` takes a request's parts and returns status, headers and body.
///
/// Serves the x509 key endpoint (configurable max-age, rotation, failure switch), the OAuth token
/// endpoint (verifies the JWT-bearer assertion for real with the service account's certificate),
/// Cloud Storage list (paging) and delete, Identity Toolkit `accounts:delete`, and injected
/// failures ("fail the next N calls to X with 503 / 429 + Retry-After").
public final class FakeGoogle: Sendable {
    /// The endpoints, for failure injection and counting.
    public enum Endpoint: Sendable, Hashable {
        case certificates, token, storageList, storageDelete, accountsDelete
    }

    /// One request as the fake saw it.
    public struct RecordedRequest: Sendable {
        /// The endpoint the request was routed to; nil when no endpoint matched (answered 404).
        public var endpoint: Endpoint?
        /// The request method, e.g. `POST`.
        public var method: String
        /// The raw path, still percent-encoded, without the query.
        public var path: String
        /// The raw query string, without the `?` ("" when there was none).
        public var query: String
        /// The header fields in the order they were sent.
        public var headers: [(String, String)]
        /// The request body bytes.
        public var body: [UInt8]

        /// The first value of header `name` (case-insensitive).
        public func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }
    }

    /// An object deletion the fake performed.
    public struct Deletion: Sendable, Hashable {
        /// The bucket the object was deleted from.
        public var bucket: String
        /// The object name, percent-decoded.
        public var name: String

        /// A deletion of object `name` in `bucket`, to compare with `deletions`.
        public init(bucket: String, name: String) {
            self.bucket = bucket
            self.name = name
        }
    }

    private struct InjectedFailure {
        var status: Int
        var retryAfter: String?
    }

    private struct State {
        var certificates: [String: String] = [TestKeys.primary.kid: TestKeys.primary.certificatePEM]
        var certificatesMaxAge: Int? = 3600
        var certificatesFailing = false
        var tokenLifetime = 3600
        var issuedTokens: [String: Double] = [:]
        var issuedTokenCount = 0
        var lastAssertionClaims: JSONObject?
        var acceptOwnerToken = false
        var storageRequiresAuth = true
        var objects: [String: Set<String>] = [:]
        var deletions: [Deletion] = []
        var listPageSize = 2
        var accounts: Set<String> = []
        var deletedAccounts: [String] = []
        var userNotFoundMessage = "USER_NOT_FOUND"
        var failures: [Endpoint: [InjectedFailure]] = [:]
        var droppedConnections = 0
        var adminCallDelay: Double = 0
        var certificatesHang: Double = 0
        var refusedDeletions: [String: Int] = [:]
        var requests: [RecordedRequest] = []
        var transportURLs: [String] = []
    }

    /// The project whose Identity Toolkit path the fake serves.
    public let projectId: String
    /// The service account whose assertions the token endpoint accepts.
    public let serviceAccount: ServiceAccount
    private let serviceCertificatePEM: String
    private let now: @Sendable () -> Double
    private let state = Mutex(State())

    /// The path of Google's x509 key endpoint.
    public static let certificatesPath = "/robot/v1/metadata/x509/securetoken@system.gserviceaccount.com"
    /// The URL of the key endpoint, to configure `HTTPCertificateSource` with.
    public static let certificatesURL = "https://www.googleapis.com" + certificatesPath

    /// A fake for `projectId`; `now` is its clock (token expiry, assertion times) in unix seconds.
    public init(
        projectId: String = "locify-test", serviceAccount: ServiceAccount = TestServiceAccount.account(),
        serviceCertificatePEM: String = TestKeys.service.certificatePEM,
        now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }
    ) {
        self.projectId = projectId
        self.serviceAccount = serviceAccount
        self.serviceCertificatePEM = serviceCertificatePEM
        self.now = now
    }

    // MARK: Configuration and inspection

    /// The published certificates by kid (replace to rotate keys).
    public var certificates: [String: String] {
        get { state.withLock { $0.certificates } }
        set { state.withLock { $0.certificates = newValue } }
    }

    /// Publishes exactly these key pairs' certificates.
    public func publish(_ pairs: [TestKeyPair]) {
        certificates = Dictionary(uniqueKeysWithValues: pairs.map { ($0.kid, $0.certificatePEM) })
    }

    /// The `Cache-Control: max-age` of the key endpoint; nil sends no Cache-Control.
    public var certificatesMaxAge: Int? {
        get { state.withLock { $0.certificatesMaxAge } }
        set { state.withLock { $0.certificatesMaxAge = newValue } }
    }

    /// When true the key endpoint answers 500.
    public var certificatesFailing: Bool {
        get { state.withLock { $0.certificatesFailing } }
        set { state.withLock { $0.certificatesFailing = newValue } }
    }

    /// The `expires_in` of issued access tokens, in seconds.
    public var tokenLifetime: Int {
        get { state.withLock { $0.tokenLifetime } }
        set { state.withLock { $0.tokenLifetime = newValue } }
    }

    /// How many access tokens the token endpoint issued.
    public var issuedTokenCount: Int { state.withLock { $0.issuedTokenCount } }

    /// The claims of the last accepted assertion.
    public var lastAssertionClaims: JSONObject? { state.withLock { $0.lastAssertionClaims } }

    /// Whether `Bearer owner` is accepted (the emulators' admin token).
    public var acceptOwnerToken: Bool {
        get { state.withLock { $0.acceptOwnerToken } }
        set { state.withLock { $0.acceptOwnerToken = newValue } }
    }

    /// Whether Storage calls need a valid bearer token (the Storage emulator needs none).
    public var storageRequiresAuth: Bool {
        get { state.withLock { $0.storageRequiresAuth } }
        set { state.withLock { $0.storageRequiresAuth = newValue } }
    }

    /// Objects per list page (small, to exercise `nextPageToken`).
    public var listPageSize: Int {
        get { state.withLock { $0.listPageSize } }
        set { state.withLock { $0.listPageSize = max(1, newValue) } }
    }

    /// The message Identity Toolkit gives for an unknown account (`USER_NOT_FOUND`, or with a detail).
    public var userNotFoundMessage: String {
        get { state.withLock { $0.userNotFoundMessage } }
        set { state.withLock { $0.userNotFoundMessage = newValue } }
    }

    /// Stores objects in `bucket`.
    public func addObjects(_ names: [String], bucket: String) {
        state.withLock { $0.objects[bucket, default: []].formUnion(names) }
    }

    /// The objects currently in `bucket`, sorted.
    public func objects(bucket: String) -> [String] {
        state.withLock { ($0.objects[bucket] ?? []).sorted() }
    }

    /// Every deletion performed, in order.
    public var deletions: [Deletion] { state.withLock { $0.deletions } }

    /// Creates Firebase Auth accounts.
    public func addAccounts(_ uids: [String]) {
        state.withLock { $0.accounts.formUnion(uids) }
    }

    /// The accounts that still exist.
    public var accounts: Set<String> { state.withLock { $0.accounts } }

    /// Every account deleted, in order.
    public var deletedAccounts: [String] { state.withLock { $0.deletedAccounts } }

    /// Makes the next `count` calls to `endpoint` fail with `status` (and `Retry-After` when given).
    public func failNext(_ endpoint: Endpoint, count: Int = 1, status: Int = 503, retryAfter: String? = nil) {
        state.withLock { state in
            state.failures[endpoint, default: []] += Array(
                repeating: InjectedFailure(status: status, retryAfter: retryAfter), count: count)
        }
    }

    /// Forgets every failure injected with `failNext` that has not happened yet.
    public func clearFailures() {
        state.withLock { $0.failures = [:] }
    }

    /// Seconds every Storage and Identity Toolkit call takes before it is answered (default 0), so
    /// concurrent workers overlap in tests.
    public var adminCallDelay: Double {
        get { state.withLock { $0.adminCallDelay } }
        set { state.withLock { $0.adminCallDelay = max(0, newValue) } }
    }

    /// Seconds the key endpoint holds each request before answering (default 0): a hanging
    /// Google. `releaseHangingRequests()` (or setting 0) lets the held requests go.
    public var certificatesHang: Double {
        get { state.withLock { $0.certificatesHang } }
        set { state.withLock { $0.certificatesHang = max(0, newValue) } }
    }

    /// Lets every request held by `certificatesHang` answer now.
    public func releaseHangingRequests() {
        certificatesHang = 0
    }

    /// Holds a key-endpoint request while `certificatesHang` says so (checked every 20 ms).
    private func holdWhileCertificatesHang() {
        let start = Date()
        while Date().timeIntervalSince(start) < certificatesHang {
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    /// Makes every deletion of object `name` (any bucket) fail with `status`, for good (an
    /// object Google refuses, e.g. 400 for a name it cannot hold).
    public func refuseDeletion(of name: String, status: Int = 400) {
        state.withLock { $0.refusedDeletions[name] = status }
    }

    /// Makes the next `count` requests through `InProcessTransport` fail without an HTTP answer.
    public func dropNextConnections(_ count: Int = 1) {
        state.withLock { $0.droppedConnections += count }
    }

    /// Every request handled, in order.
    public var requests: [RecordedRequest] { state.withLock { $0.requests } }

    /// How many requests reached `endpoint` (including injected failures).
    public func requestCount(_ endpoint: Endpoint) -> Int {
        state.withLock { $0.requests.filter { $0.endpoint == endpoint }.count }
    }

    /// The full URLs sent through `InProcessTransport`, in order.
    public var transportURLs: [String] { state.withLock { $0.transportURLs } }

    /// Called by transports: records the URL and says whether to drop the connection.
    func recordTransport(url: String) -> Bool {
        state.withLock { state in
            state.transportURLs.append(url)
            guard state.droppedConnections > 0 else { return false }
            state.droppedConnections -= 1
            return true
        }
    }

    // MARK: Handling

    /// Answers one request. `path` is the raw (still percent-encoded) path, `query` the raw query.
    public func handle(
        method: String, path: String, query: String, headers: [(String, String)], body: [UInt8]
    ) -> (status: Int, headers: [(String, String)], body: [UInt8]) {
        let endpoint = route(method: method, path: path)
        let request = RecordedRequest(endpoint: endpoint, method: method, path: path, query: query, headers: headers, body: body)
        let delay = state.withLock { $0.adminCallDelay }
        if delay > 0, let endpoint, endpoint != .certificates, endpoint != .token {
            Thread.sleep(forTimeInterval: delay)
        }
        let injected: InjectedFailure? = state.withLock { state in
            state.requests.append(request)
            guard let endpoint, var queue = state.failures[endpoint], !queue.isEmpty else { return nil }
            let failure = queue.removeFirst()
            state.failures[endpoint] = queue
            return failure
        }
        if let injected {
            var responseHeaders = [("Content-Type", "application/json")]
            if let retryAfter = injected.retryAfter { responseHeaders.append(("Retry-After", retryAfter)) }
            return (injected.status, responseHeaders, Self.errorBody(code: injected.status, message: "injected failure"))
        }
        switch endpoint {
        case .certificates:
            holdWhileCertificatesHang()
            return certificatesResponse()
        case .token: return tokenResponse(body: body)
        case .storageList: return storageList(request)
        case .storageDelete: return storageDelete(request)
        case .accountsDelete: return accountsDelete(request)
        case nil: return (404, [("Content-Type", "application/json")], Self.errorBody(code: 404, message: "Not Found"))
        }
    }

    private func route(method: String, path: String) -> Endpoint? {
        if method == "GET", path == Self.certificatesPath { return .certificates }
        if method == "POST", path == "/token" { return .token }
        if path.hasPrefix("/storage/v1/b/") {
            let rest = path.dropFirst("/storage/v1/b/".count)
            guard let slash = rest.firstIndex(of: "/") else { return nil }
            let afterBucket = rest[slash...]
            if method == "GET", afterBucket == "/o" { return .storageList }
            if method == "DELETE", afterBucket.hasPrefix("/o/") { return .storageDelete }
            return nil
        }
        let identityPath =
            path.hasPrefix("/identitytoolkit.googleapis.com/")
            ? String(path.dropFirst("/identitytoolkit.googleapis.com".count)) : path
        if method == "POST", identityPath.hasPrefix("/v1/projects/"), identityPath.hasSuffix("/accounts:delete") {
            return .accountsDelete
        }
        return nil
    }

    // MARK: Endpoints

    private func certificatesResponse() -> (status: Int, headers: [(String, String)], body: [UInt8]) {
        let (certificates, maxAge, failing) = state.withLock { ($0.certificates, $0.certificatesMaxAge, $0.certificatesFailing) }
        if failing { return (500, [("Content-Type", "text/plain")], Array("backend error".utf8)) }
        var headers = [("Content-Type", "application/json; charset=UTF-8")]
        if let maxAge { headers.append(("Cache-Control", "public, max-age=\(maxAge), must-revalidate, no-transform")) }
        var object = JSONObject()
        for kid in certificates.keys.sorted() { object[kid] = .string(certificates[kid] ?? "") }
        return (200, headers, JSONWriter.encode(.object(object)))
    }

    private func tokenResponse(body: [UInt8]) -> (status: Int, headers: [(String, String)], body: [UInt8]) {
        func refuse(_ description: String) -> (status: Int, headers: [(String, String)], body: [UInt8]) {
            (
                400, [("Content-Type", "application/json")],
                JSONWriter.encode(["error": "invalid_grant", "error_description": .string(description)])
            )
        }
        let form = Self.parseForm(body)
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" else {
            return refuse("unsupported grant_type")
        }
        guard let assertion = form["assertion"] else { return refuse("missing assertion") }
        let segments = assertion.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count == 3, let headerBytes = Base64URL.decode(String(segments[0])),
            let claimBytes = Base64URL.decode(String(segments[1])), let signature = Base64URL.decode(String(segments[2])),
            let header = try? JSONParser.parse(headerBytes).objectValue,
            let claims = try? JSONParser.parse(claimBytes).objectValue
        else { return refuse("malformed assertion") }
        guard header["alg"] == "RS256", header["typ"] == "JWT", header["kid"]?.stringValue == serviceAccount.privateKeyId
        else { return refuse("bad assertion header") }
        guard let publicKey = try? RSAPublicKey(certificatePEM: serviceCertificatePEM),
            publicKey.verify(signature: signature, message: Array("\(segments[0]).\(segments[1])".utf8))
        else { return refuse("Invalid JWT Signature.") }
        guard claims["iss"]?.stringValue == serviceAccount.clientEmail else { return refuse("bad iss") }
        guard claims["aud"]?.stringValue == serviceAccount.tokenURI else { return refuse("bad aud") }
        guard claims["scope"]?.stringValue == ServiceAccountTokenProvider.scope else { return refuse("bad scope") }
        guard let issuedAt = claims["iat"]?.numberValue, let expiresAt = claims["exp"]?.numberValue else {
            return refuse("missing iat/exp")
        }
        let time = now()
        guard expiresAt > issuedAt, expiresAt - issuedAt <= 3600 else { return refuse("exp must be within an hour of iat") }
        guard issuedAt <= time + 5 else { return refuse("Invalid JWT: Token must be a short-lived token and in a reasonable timeframe") }
        guard expiresAt > time else { return refuse("assertion expired") }

        let (token, lifetime): (String, Int) = state.withLock { state in
            state.issuedTokenCount += 1
            let token = "fake-access-token-\(state.issuedTokenCount)"
            state.issuedTokens[token] = time + Double(state.tokenLifetime)
            state.lastAssertionClaims = claims
            return (token, state.tokenLifetime)
        }
        return (
            200, [("Content-Type", "application/json; charset=utf-8")],
            JSONWriter.encode(["access_token": .string(token), "expires_in": .number(Double(lifetime)), "token_type": "Bearer"])
        )
    }

    /// Whether the request carries an access token the fake issued (and that has not expired).
    private func authorized(_ request: RecordedRequest) -> Bool {
        guard let value = request.header("Authorization"), value.hasPrefix("Bearer ") else { return false }
        let token = String(value.dropFirst("Bearer ".count))
        let time = now()
        return state.withLock { state in
            if token == "owner" { return state.acceptOwnerToken }
            guard let expiresAt = state.issuedTokens[token] else { return false }
            return time < expiresAt
        }
    }

    private static let unauthorized: (status: Int, headers: [(String, String)], body: [UInt8]) = (
        401, [("Content-Type", "application/json")], errorBody(code: 401, message: "Invalid Credentials")
    )

    private func storageList(_ request: RecordedRequest) -> (status: Int, headers: [(String, String)], body: [UInt8]) {
        if storageRequiresAuth, !authorized(request) { return Self.unauthorized }
        guard let bucket = Self.bucket(in: request.path) else { return (400, [], Self.errorBody(code: 400, message: "bad bucket")) }
        let query = Self.parseForm(Array(request.query.utf8))
        let prefix = query["prefix"] ?? ""
        let (names, pageSize) = state.withLock { state in
            ((state.objects[bucket] ?? []).filter { $0.hasPrefix(prefix) }.sorted(), state.listPageSize)
        }
        var start = 0
        if let pageToken = query["pageToken"] {
            guard pageToken.hasPrefix("page-"), let offset = Int(pageToken.dropFirst(5)), offset >= 0 else {
                return (400, [], Self.errorBody(code: 400, message: "Invalid pageToken"))
            }
            start = offset
        }
        let page = names.dropFirst(start).prefix(pageSize)
        var response: JSONObject = ["kind": "storage#objects"]
        if !page.isEmpty {
            response["items"] = .array(page.map { ["kind": "storage#object", "name": .string($0), "bucket": .string(bucket)] })
        }
        if start + page.count < names.count { response["nextPageToken"] = .string("page-\(start + page.count)") }
        return (200, [("Content-Type", "application/json; charset=UTF-8")], JSONWriter.encode(.object(response)))
    }

    private func storageDelete(_ request: RecordedRequest) -> (status: Int, headers: [(String, String)], body: [UInt8]) {
        if storageRequiresAuth, !authorized(request) { return Self.unauthorized }
        guard let bucket = Self.bucket(in: request.path), let marker = request.path.range(of: "/o/") else {
            return (400, [], Self.errorBody(code: 400, message: "bad path"))
        }
        let encodedName = request.path[marker.upperBound...]
        // The object name must arrive as ONE segment: a raw "/" would address another resource.
        guard !encodedName.contains("/"), let name = PercentEncoding.decode(encodedName) else {
            return (404, [("Content-Type", "application/json")], Self.errorBody(code: 404, message: "Not Found"))
        }
        if let status = state.withLock({ $0.refusedDeletions[name] }) {
            return (status, [("Content-Type", "application/json")], Self.errorBody(code: status, message: "Invalid object name"))
        }
        let removed: Bool = state.withLock { state in
            guard state.objects[bucket]?.remove(name) != nil else { return false }
            state.deletions.append(Deletion(bucket: bucket, name: name))
            return true
        }
        guard removed else {
            return (404, [("Content-Type", "application/json")], Self.errorBody(code: 404, message: "No such object: \(bucket)/\(name)"))
        }
        return (204, [], [])
    }

    private func accountsDelete(_ request: RecordedRequest) -> (status: Int, headers: [(String, String)], body: [UInt8]) {
        guard authorized(request) else { return Self.unauthorized }
        guard request.path.hasSuffix("/v1/projects/\(projectId)/accounts:delete") else {
            return (403, [("Content-Type", "application/json")], Self.errorBody(code: 403, message: "PERMISSION_DENIED"))
        }
        guard let body = try? JSONParser.parse(request.body).objectValue, let uid = body["localId"]?.stringValue else {
            return (400, [("Content-Type", "application/json")], Self.errorBody(code: 400, message: "MISSING_LOCAL_ID"))
        }
        let (removed, notFound) = state.withLock { state in
            guard state.accounts.remove(uid) != nil else { return (false, state.userNotFoundMessage) }
            state.deletedAccounts.append(uid)
            return (true, state.userNotFoundMessage)
        }
        guard removed else {
            return (400, [("Content-Type", "application/json")], Self.errorBody(code: 400, message: notFound))
        }
        return (200, [("Content-Type", "application/json")], JSONWriter.encode(["kind": "identitytoolkit#DeleteAccountResponse"]))
    }

    // MARK: Helpers

    /// Google's error body shape.
    static func errorBody(code: Int, message: String) -> [UInt8] {
        JSONWriter.encode([
            "error": ["code": .number(Double(code)), "message": .string(message), "errors": [["message": .string(message)]]]
        ])
    }

    /// The decoded bucket segment of `/storage/v1/b/<bucket>/o...`.
    static func bucket(in path: String) -> String? {
        let rest = path.dropFirst("/storage/v1/b/".count)
        guard let slash = rest.firstIndex(of: "/") else { return nil }
        return PercentEncoding.decode(rest[..<slash])
    }

    /// Parses `a=b&c=d` (form bodies and query strings), decoding `+` and `%XX`.
    static func parseForm(_ bytes: [UInt8]) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in String(decoding: bytes, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = PercentEncoding.decode(parts[0].replacingOccurrences(of: "+", with: " ")) ?? ""
            let value = parts.count > 1 ? PercentEncoding.decode(parts[1].replacingOccurrences(of: "+", with: " ")) ?? "" : ""
            fields[name] = value
        }
        return fields
    }
}
