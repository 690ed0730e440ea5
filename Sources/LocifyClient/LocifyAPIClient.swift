import Foundation
import Logging

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The Locify REST API, one async method per `/v1` endpoint. Stateless and `Sendable`: share
/// one instance. Every request carries a Firebase ID token from the app's ``TokenProvider``; a 401
/// asks it once more with `forceRefresh: true` and retries once. Each request carries a fresh
/// `X-Request-Id` (the server logs it), kept in the errors it ends with (``LocifyError/requestID``);
/// ``logger`` is told of every request and failure.
///
/// ```swift
/// let api = LocifyAPIClient(baseURL: URL(string: "https://api.example.com")!) { forceRefresh in
///     try await Auth.auth().currentUser!.getIDToken(forcingRefresh: forceRefresh)
/// }
/// let firstPage = try await api.listCategories()
/// ```
public struct LocifyAPIClient: Sendable {
    /// Returns a Firebase ID token; `forceRefresh` is true after the server refused the last one.
    public typealias TokenProvider = @Sendable (_ forceRefresh: Bool) async throws -> String

    /// The server's root (`/v1/...` is appended).
    public let baseURL: URL
    let session: URLSession
    let token: TokenProvider
    /// Seconds before a request without an answer fails with ``LocifyError/network(_:)``.
    public var timeout: TimeInterval
    /// Where the client and its ``SyncEngine`` log (swift-log): each request at `debug`, refused
    /// requests at `notice`, network failures at `warning`, syncs at `info`. Silent by default.
    public var logger: Logger

    /// - Parameters:
    ///   - baseURL: the server's root, e.g. `https://api.locify.app`.
    ///   - session: the URLSession to use (default: an ephemeral one without a cache).
    ///   - timeout: seconds per request (default 30).
    ///   - logger: where to log (default: nowhere).
    ///   - token: the app's ID-token source (Firebase's `getIDToken(forcingRefresh:)`).
    public init(
        baseURL: URL, session: URLSession? = nil, timeout: TimeInterval = 30, logger: Logger = LocifyAPIClient.silentLogger,
        token: @escaping TokenProvider
    ) {
        self.baseURL = baseURL
        self.session = session ?? Self.defaultSession()
        self.timeout = timeout
        self.logger = logger
        self.token = token
    }

    /// A logger that drops everything (the default).
    public static let silentLogger = Logger(label: "LocifyClient") { _ in SwiftLogNoOpLogHandler() }

    /// A new `X-Request-Id`: a UUID, which the server keeps as the request's id in its log.
    static func newRequestID() -> String { UUID().uuidString.lowercased() }

    static func defaultSession() -> URLSession {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        return URLSession(configuration: configuration)
    }

    // MARK: Categories

    /// `GET /v1/categories`: one page, ordered by name (case-insensitive), then id.
    public func listCategories(page: Int = 1, size: Int = 20) async throws -> Page<Category> {
        try await decode(.get, "/v1/categories", query: [("page", String(page)), ("size", String(size))])
    }

    /// Every live category, page after page (100 per request).
    public func allCategories() async throws -> [Category] {
        try await all { page in try await listCategories(page: page, size: 100) }
    }

    /// `GET /v1/categories/{id}`.
    public func category(id: UUID) async throws -> Category {
        try await decode(.get, "/v1/categories/\(id.lowercased)")
    }

    /// `POST /v1/categories`: creates, or upserts an existing id under last write wins
    /// (``LocifyError/conflict(_:serverRecord:)`` when the server's record is newer).
    public func createCategory(_ write: CategoryWrite) async throws -> Category {
        try await decode(.post, "/v1/categories", body: write, kind: .category)
    }

    /// Where a replace names its record: `PUT /v1/<records>/{id}` or `PUT /v1/<records>` with the
    /// id in the body (the same operation on the server).
    public enum IDPlacement: Sendable, Hashable {
        case path, body
    }

    /// `PUT /v1/categories/{id}` (or `PUT /v1/categories`): replaces the editable fields; a
    /// deleted category comes back when the write is newer.
    public func replaceCategory(_ write: CategoryWrite, idIn placement: IDPlacement = .path) async throws -> Category {
        let path = placement == .path ? "/v1/categories/\(write.id.lowercased)" : "/v1/categories"
        return try await decode(.put, path, body: write, kind: .category)
    }

    /// `DELETE /v1/categories/{id}`: deletes the category and its locations, or moves them to
    /// `reassignTo`. `updatedAt` is when the user deleted it (a newer server record wins: E008).
    public func deleteCategory(id: UUID, updatedAt: Date? = nil, reassignTo: UUID? = nil) async throws {
        var query: [(String, String)] = []
        if let updatedAt { query.append(("updated_at", updatedAt.rfc3339)) }
        if let reassignTo { query.append(("reassign_category_id", reassignTo.lowercased)) }
        _ = try await send(.delete, "/v1/categories/\(id.lowercased)", query: query, kind: .category)
    }

    // MARK: Locations

    /// Filters and order of a location listing.
    public struct LocationQuery: Sendable, Hashable {
        /// `created_at` (newest first, the default), `updated_at` (newest first) or `name` (A-Z).
        public enum Sort: String, Sendable, Hashable {
            case createdAt = "created_at"
            case updatedAt = "updated_at"
            case name
        }

        /// Only the locations of this category (a category the user does not have gives an empty page).
        public var categoryID: UUID?
        /// Only favourites (true) or only the others (false); nil for both.
        public var isFavorite: Bool?
        /// Case-insensitive substring of name, address or description.
        public var search: String?
        /// The order; nil leaves the server's default (`created_at`, newest first).
        public var sort: Sort?

        /// A query; every filter nil lists all the user's live locations.
        public init(categoryID: UUID? = nil, isFavorite: Bool? = nil, search: String? = nil, sort: Sort? = nil) {
            self.categoryID = categoryID
            self.isFavorite = isFavorite
            self.search = search
            self.sort = sort
        }
    }

    /// `GET /v1/locations`: one page of the user's locations.
    public func listLocations(_ query: LocationQuery = .init(), page: Int = 1, size: Int = 20) async throws -> Page<Location> {
        var items = [("page", String(page)), ("size", String(size))]
        if let categoryID = query.categoryID { items.append(("category_id", categoryID.lowercased)) }
        if let isFavorite = query.isFavorite { items.append(("is_favorite", isFavorite ? "true" : "false")) }
        if let search = query.search { items.append(("q", search)) }
        if let sort = query.sort { items.append(("sort", sort.rawValue)) }
        return try await decode(.get, "/v1/locations", query: items)
    }

    /// Every location matching `query`, page after page (100 per request).
    public func allLocations(_ query: LocationQuery = .init()) async throws -> [Location] {
        try await all { page in try await listLocations(query, page: page, size: 100) }
    }

    /// `GET /v1/locations/{id}`.
    public func location(id: UUID) async throws -> Location {
        try await decode(.get, "/v1/locations/\(id.lowercased)")
    }

    /// `POST /v1/locations`: creates, or upserts an existing id under last write wins.
    public func createLocation(_ write: LocationWrite) async throws -> Location {
        try await decode(.post, "/v1/locations", body: write, kind: .location)
    }

    /// `PUT /v1/locations/{id}` (or `PUT /v1/locations`): replaces the editable fields.
    public func replaceLocation(_ write: LocationWrite, idIn placement: IDPlacement = .path) async throws -> Location {
        let path = placement == .path ? "/v1/locations/\(write.id.lowercased)" : "/v1/locations"
        return try await decode(.put, path, body: write, kind: .location)
    }

    /// `DELETE /v1/locations/{id}`; `updatedAt` is when the user deleted it.
    public func deleteLocation(id: UUID, updatedAt: Date? = nil) async throws {
        var query: [(String, String)] = []
        if let updatedAt { query.append(("updated_at", updatedAt.rfc3339)) }
        _ = try await send(.delete, "/v1/locations/\(id.lowercased)", query: query, kind: .location)
    }

    // MARK: Sync

    /// `POST /v1/sync/push`: at most ``ServerInfo/maxPushChanges`` changes, one result each, in
    /// the order sent. Replaying a batch whose answer was lost is safe.
    public func push(_ changes: [PushChange]) async throws -> [PushResult] {
        try await push(changes, asUser: nil).results
    }

    /// `push`, sent only with a token of `user` (else ``LocifyError/wrongAccount(storeUser:tokenUser:)``);
    /// with the answer's `server_time` (nil from a server without it).
    func push(_ changes: [PushChange], asUser user: String?) async throws -> (results: [PushResult], serverTime: Date?) {
        struct Request: Encodable { var changes: [PushChange] }
        struct Response: Decodable {
            var results: [PushResult]
            var serverTime: Date?

            enum CodingKeys: String, CodingKey {
                case results
                case serverTime = "server_time"
            }
        }
        let requestID = Self.newRequestID()
        let response: Response = try await decode(
            .post, "/v1/sync/push", body: Request(changes: changes), asUser: user, requestID: requestID)
        guard response.results.count == changes.count else {
            throw LocifyError.unexpectedResponse(
                status: 200, body: "\(response.results.count) results for \(changes.count) changes")
        }
        // A change's refusal keeps the id of the request that carried it.
        let results = response.results.map { result in
            var result = result
            result.error = result.error?.withRequestID(requestID)
            return result
        }
        return (results, response.serverTime)
    }

    /// `GET /v1/sync/changes`: without `since` a snapshot, with it the changes after that cursor.
    /// ``LocifyError/cursorExpired(_:)`` (E009) means: start again without `since`. With `wait`
    /// (seconds, at most ``ServerInfo/maxWaitSeconds``), a pull that finds nothing after `since`
    /// is held by the server until a change commits or the wait ends (long-poll); the request's
    /// time-out is raised above the wait when it is shorter.
    public func pull(since cursor: String?, limit: Int = 500, wait: Int = 0) async throws -> FeedPage {
        try await pull(since: cursor, limit: limit, wait: wait, asUser: nil)
    }

    /// `pull`, sent only with a token of `user` (else ``LocifyError/wrongAccount(storeUser:tokenUser:)``).
    func pull(since cursor: String?, limit: Int, wait: Int = 0, asUser user: String?) async throws -> FeedPage {
        var query = [("limit", String(limit))]
        if let cursor { query.append(("since", cursor)) }
        var client = self
        if wait > 0 {
            query.append(("wait", String(wait)))
            client.timeout = max(timeout, TimeInterval(wait) + Self.waitMargin)
        }
        return try await client.decode(.get, "/v1/sync/changes", query: query, asUser: user)
    }

    /// How much longer than a long-poll's wait its request may take before it times out.
    static let waitMargin: TimeInterval = 5

    /// The user of the current token (its `sub` claim, read without verifying: the server
    /// verifies), or of `GET /v1/users/me` when the token is not a readable JWT.
    public func currentUserID() async throws -> String {
        if let user = Self.subject(ofToken: try await token(forceRefresh: false)) { return user }
        return try await me().id
    }

    /// The `sub` claim of a JWT, or nil when `token` is not one.
    static func subject(ofToken token: String) -> String? {
        struct Claims: Decodable { var sub: String }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64) else { return nil }
        return try? JSONDecoder().decode(Claims.self, from: data).sub
    }

    /// `GET /v1/info`: the limits a client must respect.
    public func info() async throws -> ServerInfo {
        try await decode(.get, "/v1/info")
    }

    // MARK: Users

    /// `GET /v1/users/me` (the account is created on the first authenticated request).
    public func me() async throws -> UserProfile {
        try await decode(.get, "/v1/users/me")
    }

    /// `PUT /v1/users/me`: renames the user.
    public func updateMe(name: String) async throws -> UserProfile {
        struct Request: Encodable { var name: String }
        return try await decode(.put, "/v1/users/me", body: Request(name: name))
    }

    /// `DELETE /v1/users/me`: erases the account and everything in it. Tokens issued before are
    /// refused from then on; sign the user out.
    public func deleteAccount() async throws {
        _ = try await send(.delete, "/v1/users/me")
    }
}

extension LocifyAPIClient {
    enum Method: String, Sendable {
        case get = "GET", post = "POST", put = "PUT", delete = "DELETE"
    }

    private func all<Element: Sendable>(_ fetch: (Int) async throws -> Page<Element>) async throws -> [Element] {
        var records: [Element] = []
        var page = 1
        while true {
            let result = try await fetch(page)
            records += result.data
            if page >= result.meta.totalPages || result.data.isEmpty { return records }
            page += 1
        }
    }

    func decode<Response: Decodable>(
        _ method: Method, _ path: String, query: [(String, String)] = [], kind: RecordKind? = nil, asUser user: String? = nil
    ) async throws -> Response {
        try await decode(method, path, query: query, body: Optional<Data>.none, kind: kind, asUser: user)
    }

    func decode<Response: Decodable, Body: Encodable>(
        _ method: Method, _ path: String, query: [(String, String)] = [], body: Body?, kind: RecordKind? = nil,
        asUser user: String? = nil, requestID: String = newRequestID()
    ) async throws -> Response {
        let encoded: Data?
        do {
            encoded = try body.map { try JSONCoding.encoder.encode($0) }
        } catch {
            throw LocifyError.unexpectedResponse(status: 0, body: "request not encodable: \(error)")
        }
        let data = try await send(method, path, query: query, body: encoded, kind: kind, asUser: user, requestID: requestID)
        do {
            return try JSONCoding.decoder.decode(Response.self, from: data)
        } catch {
            throw LocifyError.unexpectedResponse(status: 200, body: "undecodable answer (\(error)): \(String(decoding: data.prefix(200), as: UTF8.self))")
        }
    }

    /// A token from the app, its failures as ``LocifyError``s: a refresh that could not reach the
    /// network (a `URLError`, or an error wrapping one, as Firebase's does) is
    /// ``LocifyError/network(_:)``, offline rather than failed; anything else is
    /// ``LocifyError/tokenUnavailable(_:)``.
    private func token(forceRefresh: Bool) async throws -> String {
        do {
            return try await self.token(forceRefresh)
        } catch is CancellationError {
            throw LocifyError.cancelled
        } catch let error as LocifyError {
            throw error
        } catch {
            if let failure = NetworkFailure(causeOf: error) { throw LocifyError.network(failure) }
            throw LocifyError.tokenUnavailable(String(describing: error))
        }
    }

    /// Sends one request with a token, refreshing the token once on 401, and returns the body of
    /// a 2xx answer; anything else is thrown as a ``LocifyError``. With `user`, a token of another
    /// user is never sent. `requestID` is the `X-Request-Id` sent (a retry after a 401 keeps it).
    func send(
        _ method: Method, _ path: String, query: [(String, String)] = [], body: Data? = nil, kind: RecordKind? = nil,
        asUser user: String? = nil, requestID: String = newRequestID()
    ) async throws -> Data {
        var forceRefresh = false
        while true {
            try checkCancellation()
            let token = try await self.token(forceRefresh: forceRefresh)
            if let user, let tokenUser = Self.subject(ofToken: token), tokenUser != user {
                throw LocifyError.wrongAccount(storeUser: user, tokenUser: tokenUser)
            }
            var request = try makeRequest(method, path, query: query, body: body, token: token)
            request.setValue(requestID, forHTTPHeaderField: "X-Request-Id")
            let data: Data, response: HTTPURLResponse
            do {
                (data, response) = try await perform(request, requestID: requestID)
            } catch let error as LocifyError {
                if case .network(let failure) = error {
                    logger.warning(
                        "\(method.rawValue) \(path) failed: \(failure.message)",
                        metadata: ["request_id": "\(requestID)", "url_error_code": "\(failure.code.map { "\($0.rawValue)" } ?? "none")"])
                }
                throw error
            }
            logger.debug("\(method.rawValue) \(path) \(response.statusCode)", metadata: ["request_id": "\(requestID)"])
            if (200..<300).contains(response.statusCode) { return data }
            let error = LocifyError.decode(
                status: response.statusCode, body: data, kind: kind,
                requestID: response.value(forHTTPHeaderField: "X-Request-Id") ?? requestID,
                retryAfter: response.value(forHTTPHeaderField: "Retry-After").flatMap { Int($0) })
            logger.notice(
                "\(method.rawValue) \(path) refused: \(response.statusCode) \(error.code ?? "no code")", metadata: ["request_id": "\(requestID)"])
            if response.statusCode == 401, !forceRefresh {
                forceRefresh = true
                continue
            }
            throw error
        }
    }

    private func checkCancellation() throws {
        if Task.isCancelled { throw LocifyError.cancelled }
    }

    private func makeRequest(
        _ method: Method, _ path: String, query: [(String, String)], body: Data?, token: String
    ) throws -> URLRequest {
        guard var components = URLComponents(url: baseURL, resolvingAgainstBaseURL: false) else {
            throw LocifyError.unexpectedResponse(status: 0, body: "bad base URL \(baseURL)")
        }
        let base = components.path.hasSuffix("/") ? String(components.path.dropLast()) : components.path
        components.path = base + path
        if !query.isEmpty {
            components.queryItems = query.map { URLQueryItem(name: $0.0, value: $0.1) }
            // `+` is a space to many servers: encode it as well.
            components.percentEncodedQuery = components.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B")
        }
        guard let url = components.url else {
            throw LocifyError.unexpectedResponse(status: 0, body: "bad URL for \(path)")
        }
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: timeout)
        request.httpMethod = method.rawValue
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = body
        }
        return request
    }

    /// One round trip; cancelling the calling task cancels the request.
    private func perform(_ request: URLRequest, requestID: String) async throws -> (Data, HTTPURLResponse) {
        let box = TaskBox()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<(Data, HTTPURLResponse), any Error>) in
                let task = session.dataTask(with: request) { data, response, error in
                    if let error {
                        let code = (error as? URLError)?.code
                        // Only a cancellation the caller asked for is `.cancelled`: the system
                        // cancels requests too (-999 on network changes, backgrounding), and
                        // that is a network failure, retried like any other.
                        if code == .cancelled && box.isCancelled {
                            continuation.resume(throwing: LocifyError.cancelled)
                        } else {
                            continuation.resume(
                                throwing: LocifyError.network(NetworkFailure(code: code, message: error.localizedDescription, requestID: requestID)))
                        }
                    } else if let http = response as? HTTPURLResponse {
                        continuation.resume(returning: (data ?? Data(), http))
                    } else {
                        continuation.resume(
                            throwing: LocifyError.network(NetworkFailure(code: nil, message: "the response is not HTTP", requestID: requestID)))
                    }
                }
                if !box.start(task) { continuation.resume(throwing: LocifyError.cancelled) }
            }
        } onCancel: {
            box.cancel()
        }
    }
}

/// Hands a data task to the cancellation handler, which may run before or after it starts. A
/// task is never started once cancelled, and cancelled only once started: FoundationNetworking
/// ignores a `cancel()` that reaches a task before its `resume()`, which then runs to its timeout.
private final class TaskBox: @unchecked Sendable {
    // Guarded by `lock`; URLSessionTask is thread-safe but not declared Sendable on every platform.
    private let lock = NSLock()
    private var task: URLSessionDataTask?
    private var cancelled = false

    /// Starts `task`, or returns false (and never starts it) when the call was cancelled first.
    func start(_ task: URLSessionDataTask) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard !cancelled else { return false }
        self.task = task
        task.resume()
        return true
    }

    /// Whether the caller cancelled the call.
    var isCancelled: Bool {
        lock.lock()
        defer { lock.unlock() }
        return cancelled
    }

    func cancel() {
        lock.lock()
        cancelled = true
        let task = self.task
        lock.unlock()
        task?.cancel()
    }
}

extension UUID {
    /// The canonical lower-case form the server answers with.
    var lowercased: String { uuidString.lowercased() }
}
