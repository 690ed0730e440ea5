import Foundation
import JSON
import Locify
import LocifyAPI
import Testing
import TestSupport
import TestSupportServer

/// One user's side of the sync endpoints of a `TestServer`: push batches, pull pages, drain the
/// feed, list the records, all over HTTP with one token.
struct SyncTestClient {
    let server: TestServer
    let uid: String
    let token: String

    init(_ server: TestServer, uid: String = "sync-" + UUID().uuidString.lowercased().prefix(12)) throws {
        self.server = server
        self.uid = uid
        self.token = try server.token(for: uid)
    }

    /// `POST /v1/sync/push` with `{"changes": changes}`.
    func push(_ changes: [JSONValue]) throws -> TestResponse {
        try server.request("POST", "/v1/sync/push", token: token, json: ["changes": .array(changes)])
    }

    /// The results of a push that must answer 200 with one result per change.
    func pushResults(_ changes: [JSONValue], sourceLocation: SourceLocation = #_sourceLocation) throws -> [JSONObject] {
        let response = try push(changes)
        #expect(response.status == 200, "push answered \(response.status): \(response.text)", sourceLocation: sourceLocation)
        let results = (response.object["results"]?.arrayValue ?? []).compactMap(\.objectValue)
        #expect(results.count == changes.count, "one result per change", sourceLocation: sourceLocation)
        return results
    }

    /// `GET /v1/sync/changes` with the raw query values given.
    func pull(since: String? = nil, limit: String? = nil) throws -> TestResponse {
        var query: [String] = []
        if let since { query.append("since=" + (since.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? since)) }
        if let limit { query.append("limit=" + limit) }
        return try server.request("GET", "/v1/sync/changes" + (query.isEmpty ? "" : "?" + query.joined(separator: "&")), token: token)
    }

    /// One page that must answer 200.
    func page(since: String? = nil, limit: Int? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws -> FeedPageJSON {
        let response = try pull(since: since, limit: limit.map(String.init))
        #expect(response.status == 200, "pull answered \(response.status): \(response.text)", sourceLocation: sourceLocation)
        return FeedPageJSON(response.object)
    }

    /// Follows cursors from `since` until `has_more` is false; every page is checked for the
    /// rules that hold on any page (at most `limit` changes, categories before locations, a
    /// cursor, a non-empty page whenever `has_more` was promised).
    func drain(since: String? = nil, limit: Int, maxPages: Int = 10_000, sourceLocation: SourceLocation = #_sourceLocation) throws
        -> (pages: [FeedPageJSON], cursor: String)
    {
        var pages: [FeedPageJSON] = []
        var cursor = since
        while pages.count < maxPages {
            let page = try self.page(since: cursor, limit: limit, sourceLocation: sourceLocation)
            #expect(page.changes.count <= limit, sourceLocation: sourceLocation)
            #expect(page.categoriesComeFirst, "categories before locations within a page", sourceLocation: sourceLocation)
            #expect(!page.cursor.isEmpty, sourceLocation: sourceLocation)
            if let previous = pages.last, previous.hasMore {
                #expect(!page.changes.isEmpty, "has_more promised a change that did not come", sourceLocation: sourceLocation)
            }
            pages.append(page)
            cursor = page.cursor
            if !page.hasMore { return (pages, page.cursor) }
        }
        Issue.record("the feed did not end within \(maxPages) pages", sourceLocation: sourceLocation)
        return (pages, cursor ?? "")
    }

    /// Every live category, through the paginated listing.
    func listCategories() throws -> [JSONObject] {
        try listAll("/v1/categories")
    }

    /// Every live location, through the paginated listing.
    func listLocations() throws -> [JSONObject] {
        try listAll("/v1/locations")
    }

    private func listAll(_ path: String) throws -> [JSONObject] {
        var records: [JSONObject] = []
        var page = 1
        while true {
            let response = try server.request("GET", "\(path)?size=100&page=\(page)", token: token)
            #expect(response.status == 200)
            let data = response.data.compactMap(\.objectValue)
            records += data
            if data.count < 100 { return records }
            page += 1
        }
    }

    /// `GET /v1/categories/{id}` or `/v1/locations/{id}`.
    func get(_ type: String, _ id: UUID) throws -> TestResponse {
        try server.request("GET", "/v1/\(type == "category" ? "categories" : "locations")/\(id.lowercasedString)", token: token)
    }
}

/// A pull response as the tests look at it.
struct FeedPageJSON {
    let changes: [JSONObject]
    let cursor: String
    let hasMore: Bool

    init(_ object: JSONObject) {
        changes = (object["changes"]?.arrayValue ?? []).compactMap(\.objectValue)
        cursor = object["cursor"]?.stringValue ?? ""
        hasMore = object["has_more"]?.boolValue ?? false
    }

    /// Whether no category change follows a location change.
    var categoriesComeFirst: Bool {
        let types = changes.map { $0["type"]?.stringValue ?? "" }
        guard let firstLocation = types.firstIndex(of: "location") else { return true }
        return !types[firstLocation...].contains("category")
    }

    /// `type:id` of every change, in order.
    var keys: [String] { changes.map(\.changeKey) }
}
