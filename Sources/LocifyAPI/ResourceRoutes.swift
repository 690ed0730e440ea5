import FirebaseAdmin
import FoundationEssentials
import HTTPServer
import JSON
import Locify
import LocifyRules
import Primitives

/// The handlers of `/v1/categories` and `/v1/locations` (openapi.yaml).
struct ResourceRoutes: Sendable {
    let services: LocifyServices
    /// Called after a category delete committed (it may have queued Storage clean-up).
    let cleanupQueued: @Sendable () -> Void

    func register(in router: inout Router<Route>) {
        Self.register(services.categories, at: "/v1/categories", in: &router, afterDelete: cleanupQueued)
        Self.register(services.locations, at: "/v1/locations", in: &router)
    }

    /// GET (list and one), POST, PUT (with and without the id in the path) and DELETE of one
    /// collection at `path`; `afterDelete` runs once a delete committed.
    static func register<Resource: RecordResource>(
        _ resource: Resource, at path: String, in router: inout Router<Route>, afterDelete: (@Sendable () -> Void)? = nil
    ) {
        let one = path + "/{id}"
        router.addAuthenticated(.GET, path) { request in
            let query = try decoding { try Resource.listQuery(request.query) }
            let page = try resource.list(request.caller, query)
            return .json(capacity: 128 + Resource.listBytesPerRecord * page.records.count) { writer in
                writer.page(page) { writer, record in Resource.encode(record, userID: request.userID, to: &writer) }
            }
        }
        router.addAuthenticated(.GET, one) { request in
            let id = try decoding { try request.parameters.id() }
            let record = try resource.get(request.caller, id: id)
            return .json { Resource.encode(record, userID: request.userID, to: &$0) }
        }
        router.addAuthenticated(.POST, path) { request in
            let draft = try decoding { try Resource.draft(json: request.request.jsonBody(), userID: request.userID, pathID: nil) }
            let outcome = try resource.create(request.caller, draft)
            return .json(outcome.status) { Resource.encode(outcome.record, userID: request.userID, to: &$0) }
        }
        let replace: @Sendable (AuthenticatedRequest, UUID?) throws -> HTTPResponse = { request, pathID in
            let draft = try decoding { try Resource.draft(json: request.request.jsonBody(), userID: request.userID, pathID: pathID) }
            let outcome = try resource.replace(request.caller, draft)
            return .json(outcome.status) { Resource.encode(outcome.record, userID: request.userID, to: &$0) }
        }
        router.addAuthenticated(.PUT, path) { try replace($0, nil) }
        router.addAuthenticated(.PUT, one) { request in
            try replace(request, decoding { try request.parameters.id() })
        }
        router.addAuthenticated(.DELETE, one) { request in
            let (id, options) = try decoding {
                (try request.parameters.id(), try DeleteOptions(body: request.request.optionalJSONBody(), query: request.request.queryItems))
            }
            try resource.delete(request.caller, id: id, options: options)
            afterDelete?()
            return .noContent
        }
    }

    /// `page`, `size`, `category_id`, `is_favorite`, `q` and `sort` of `GET /v1/locations`.
    static func locationQuery(_ query: QueryParameters) throws(APIError) -> LocationQuery {
        let search: String?
        do {
            search = try ListingRules.searchTerm(query.string("q"))
        } catch {
            throw APIError(LocifyError(error))
        }
        var sort = LocationQuery.Sort.createdAt
        if let text = query.string("sort") {
            guard let parsed = LocationQuery.Sort(rawValue: text) else {
                throw .invalidInput("sort", "must be created_at, updated_at or name")
            }
            sort = parsed
        }
        return LocationQuery(
            page: try query.pageRequest(), categoryID: try query.uuid("category_id"), isFavorite: try query.bool("is_favorite"),
            search: search, sort: sort)
    }
}
