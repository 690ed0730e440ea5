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

    /// GET (list and one), POST, PUT (with and without the id in the path), PATCH and DELETE of one
    /// collection at `path`; `afterDelete` runs once a delete committed.
    static func register<Resource: RecordResource>(
        _ resource: Resource, at path: String, in router: inout Router<Route>, afterDelete: (@Sendable () -> Void)? = nil
    ) {
        let one = path + "/{id}"
        router.addAuthenticated(.GET, path, decode: { request in try Resource.listQuery(request.query) }) { query, caller in
            let page = try resource.list(caller, query)
            return .json(capacity: 128 + Resource.listBytesPerRecord * page.records.count) { writer in
                writer.page(page) { writer, record in Resource.encode(record, userID: caller.userID, to: &writer) }
            }
        }
        router.addAuthenticated(.GET, one, decode: { request in try request.parameters.id() }) { id, caller in
            let record = try resource.get(caller, id: id)
            return .json { Resource.encode(record, userID: caller.userID, to: &$0) }
        }
        let write: @Sendable (Resource.Draft, Caller, WriteMode) throws -> HTTPResponse = { draft, caller, mode in
            let outcome = try mode == .create ? resource.create(caller, draft) : resource.replace(caller, draft)
            return .json(outcome.status) { Resource.encode(outcome.record, userID: caller.userID, to: &$0) }
        }
        router.addAuthenticated(
            .POST, path, takesBody: true, decode: { request in try Resource.draft(json: request.jsonBody(), userID: request.userID, pathID: nil) }
        ) { draft, caller in try write(draft, caller, .create) }
        router.addAuthenticated(
            .PUT, path, takesBody: true, decode: { request in try Resource.draft(json: request.jsonBody(), userID: request.userID, pathID: nil) }
        ) { draft, caller in try write(draft, caller, .replace) }
        router.addAuthenticated(
            .PUT, one, takesBody: true,
            decode: { (request) throws -> Resource.Draft in
                let id = try request.parameters.id()
                return try Resource.draft(json: request.jsonBody(), userID: request.userID, pathID: id)
            }
        ) { draft, caller in try write(draft, caller, .replace) }
        router.addAuthenticated(
            .PATCH, one, takesBody: true,
            decode: { (request) throws -> Resource.Patch in
                let id = try request.parameters.id()
                return try Resource.patch(json: request.jsonBody(), userID: request.userID, pathID: id)
            }
        ) { patch, caller in
            let outcome = try resource.patch(caller, patch)
            return .json(outcome.status) { Resource.encode(outcome.record, userID: caller.userID, to: &$0) }
        }
        router.addAuthenticated(
            .DELETE, one, takesBody: true,
            decode: { (request) throws -> (id: UUID, options: DeleteOptions) in
                let id = try request.parameters.id()
                return (id, try DeleteOptions(body: request.optionalJSONBody(), query: request.query.items))
            }
        ) { deletion, caller in
            try resource.delete(caller, id: deletion.id, options: deletion.options)
            afterDelete?()
            return .noContent
        }
    }

    /// Which write a POST or PUT asks for.
    private enum WriteMode {
        case create, replace
    }

    /// The values of `sort` (openapi.yaml) and the orders they name.
    static let sortNames: [String: LocationQuery.Sort] = ["created_at": .createdAt, "updated_at": .updatedAt, "name": .name]

    /// `page`, `size`, `category_id`, `is_favorite`, `q` and `sort` of `GET /v1/locations`.
    static func locationQuery(_ query: QueryParameters) throws(RequestDecodingError) -> LocationQuery {
        let search = try RequestDecodingError.applying(
            { (raw) throws(RuleViolation) in try ListingRules.searchTerm(raw) }, to: query.string("q"))
        var sort = LocationQuery.Sort.createdAt
        if let text = query.string("sort") {
            guard let parsed = Self.sortNames[text] else {
                throw .invalid("sort", "must be created_at, updated_at or name")
            }
            sort = parsed
        }
        return LocationQuery(
            page: try query.pageRequest(), categoryID: try query.uuid("category_id"), isFavorite: try query.bool("is_favorite"),
            search: search, sort: sort)
    }
}
