import Dispatch
import FoundationEssentials
import HTTPClient
import JSON
import LocifyRules
import Primitives
import Synchronization

/// The two Cloud Storage JSON API calls the server needs: list objects under a prefix and delete
/// one object (openapi.yaml, `HttpsUrl`). One attempt per call; the caller owns retries.
public struct CloudStorageClient: Sendable {
    /// Google's Cloud Storage endpoint.
    public static let defaultBaseURL = "https://storage.googleapis.com"

    /// API base URL without a trailing slash (`LOCIFY_STORAGE_API_URL`, default Google's).
    public var baseURL: String
    /// The transport requests go through.
    public var transport: any HTTPTransport
    /// Where the bearer token comes from; nil sends no Authorization (the emulator needs none).
    public var tokens: (any AccessTokenSource)?
    /// Per-request timeout in seconds (default 10 s).
    public var timeout: Double
    /// How many DELETEs `deleteFolder` runs at once (default 10).
    public var maxConcurrentDeletes: Int
    /// The wall clock an HTTP-date `Retry-After` counts from.
    public var clock: WallClock

    /// A client of the Cloud Storage JSON API at `baseURL` (a trailing slash is dropped); `tokens`
    /// nil sends no Authorization. `maxConcurrentDeletes` is at least 1.
    public init(
        baseURL: String = CloudStorageClient.defaultBaseURL, transport: any HTTPTransport,
        tokens: (any AccessTokenSource)?, timeout: Double = 10, maxConcurrentDeletes: Int = 10, clock: WallClock = .system
    ) {
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.transport = transport
        self.tokens = tokens
        self.timeout = timeout
        self.maxConcurrentDeletes = max(1, maxConcurrentDeletes)
        self.clock = clock
    }

    /// A client for the Storage emulator at `host:port` (`FIREBASE_STORAGE_EMULATOR_HOST`): plain
    /// HTTP, no Authorization.
    public static func emulator(host: String, transport: any HTTPTransport, clock: WallClock = .system) -> CloudStorageClient {
        CloudStorageClient(
            baseURL: host.contains("://") ? host : "http://" + host, transport: transport, tokens: nil, clock: clock)
    }

    /// The most pages one listing follows (Google's pages hold up to 1,000 objects, so 10 million
    /// objects): a listing that goes on longer ends with a retryable error instead of looping.
    public static let maximumListPages = 10_000

    /// Every object name in `bucket` starting with `prefix`, following `nextPageToken`. A page
    /// token seen before (a listing that cycles, e.g. alternating two tokens) or more than
    /// `maximumListPages` pages end the listing with a retryable error.
    public func listObjects(bucket: String, prefix: String) throws(GoogleAPIError) -> [String] {
        var names: [String] = []
        var pageToken: String?
        var seenTokens: Set<String> = []
        repeat {
            guard seenTokens.count < Self.maximumListPages else {
                throw GoogleAPIError(status: 200, message: "object list has more than \(Self.maximumListPages) pages", retryable: true)
            }
            var url = objectsURL(bucket: bucket) + "?prefix=" + PercentEncoding.encodeComponent(prefix)
            if let pageToken { url += "&pageToken=" + PercentEncoding.encodeComponent(pageToken) }
            let response = try send(method: "GET", url: url)
            guard response.status == 200 else { throw GoogleResponse.error(from: response, now: clock.seconds()) }
            guard let page = try? JSONParser.parse(response.body).objectValue else {
                throw GoogleAPIError(status: 200, message: "object list is not a JSON object", retryable: true)
            }
            for item in page["items"]?.arrayValue ?? [] {
                if let name = item.objectValue?["name"]?.stringValue { names.append(name) }
            }
            let next = page["nextPageToken"]?.stringValue
            pageToken = next?.isEmpty == false ? next : nil
            if let pageToken {
                guard seenTokens.insert(pageToken).inserted else {
                    throw GoogleAPIError(status: 200, message: "object list repeated a page token", retryable: true)
                }
            }
        } while pageToken != nil
        return names
    }

    /// Deletes one object; an object that is already gone (404) counts as deleted.
    public func deleteObject(bucket: String, name: String) throws(GoogleAPIError) {
        let url = objectsURL(bucket: bucket) + "/" + PercentEncoding.encodeComponent(name)
        let response = try send(method: "DELETE", url: url)
        switch response.status {
        case 200, 204, 404: return
        default: throw GoogleResponse.error(from: response, now: clock.seconds())
        }
    }

    /// Lists every object under `prefix` and deletes them as `deleteObjects` does.
    public func deleteFolder(bucket: String, prefix: String) throws(GoogleAPIError) -> Int {
        try deleteObjects(bucket: bucket, names: listObjects(bucket: bucket, prefix: prefix))
    }

    /// Deletes the objects `names`, at most `maxConcurrentDeletes` at once. Returns how many were
    /// removed (already-gone ones included). An object Google refuses for good (`isPermanent`)
    /// does not stop the others; a retryable failure does (the rest are left for the next
    /// attempt). The first error, retryable ones first, is thrown after in-flight deletes finish.
    public func deleteObjects(bucket: String, names: [String]) throws(GoogleAPIError) -> Int {
        guard !names.isEmpty else { return 0 }
        let run = FolderDeletion(names: names)
        let group = DispatchGroup()
        for _ in 0..<min(maxConcurrentDeletes, names.count) {
            group.enter()
            let deleteClaimed: @Sendable () -> Void = { [self] in
                defer { group.leave() }
                while let name = run.claimNext() {
                    do throws(GoogleAPIError) {
                        try deleteObject(bucket: bucket, name: name)
                        run.recordSuccess()
                    } catch {
                        run.recordFailure(error)
                    }
                }
            }
            do throws(ThreadStartError) {
                try DedicatedThread.start(name: "locify.storage-delete", deleteClaimed)
            } catch {
                deleteClaimed()  // no thread to spare: this one deletes (what is left) itself
            }
        }
        group.wait()
        return try run.outcome()
    }

    private func objectsURL(bucket: String) -> String {
        baseURL + "/storage/v1/b/" + PercentEncoding.encodeComponent(bucket) + "/o"
    }

    private func send(method: String, url: String) throws(GoogleAPIError) -> TransportResponse {
        var headers: [(String, String)] = [("Accept", "application/json")]
        if let tokens {
            do {
                headers.append(("Authorization", "Bearer " + (try tokens.accessToken())))
            } catch {
                throw GoogleAPIError.accessToken(error)
            }
        }
        do {
            return try transport.send(TransportRequest(method: method, url: url, headers: headers, timeout: timeout))
        } catch {
            throw GoogleAPIError.transport(error)
        }
    }
}

/// Shared progress of one `deleteFolder` run across its worker threads.
private final class FolderDeletion: Sendable {
    private struct State {
        var next = 0
        var deleted = 0
        var firstError: GoogleAPIError?
        var firstPermanentError: GoogleAPIError?
    }

    private let names: [String]
    private let state = Mutex(State())

    init(names: [String]) {
        self.names = names
    }

    /// The next name to delete, or nil when done or after a failure.
    func claimNext() -> String? {
        state.withLock { state in
            guard state.firstError == nil, state.next < names.count else { return nil }
            defer { state.next += 1 }
            return names[state.next]
        }
    }

    func recordSuccess() {
        state.withLock { $0.deleted += 1 }
    }

    /// Records a failure: a permanent one lets the run go on, any other stops it.
    func recordFailure(_ error: GoogleAPIError) {
        state.withLock { state in
            if error.isPermanent {
                if state.firstPermanentError == nil { state.firstPermanentError = error }
            } else if state.firstError == nil {
                state.firstError = error
            }
        }
    }

    func outcome() throws(GoogleAPIError) -> Int {
        let (deleted, error, permanent) = state.withLock { ($0.deleted, $0.firstError, $0.firstPermanentError) }
        if let error { throw error }
        if let permanent { throw permanent }
        return deleted
    }
}
