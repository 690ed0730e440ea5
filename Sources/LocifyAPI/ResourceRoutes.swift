import FirebaseAdmin
import Foundation
import HTTPServer
import JSON
import Locify
import Primitives

/// The handlers of `/v1/categories` and `/v1/locations` (openapi.yaml).
struct ResourceRoutes: Sendable {
    let services: LocifyServices
    /// Called after a category delete committed (it may have queued Storage clean-up).
    let cleanupQueued: @Sendable () -> Void

    /// Longest `q`, in code points.
    static let maxSearchLength = 255

    func register(in router: inout Router<Route>) {
        let categories = services.categories
        let locations = services.locations
        let cleanupQueued = self.cleanupQueued
        router.addAuthenticated(.GET, "/v1/categories") { request in
            let pageRequest = try decoding { try request.query.pageRequest() }
            let page = try categories.list(request.caller, pageRequest)
            return .json(capacity: 128 + 320 * page.records.count) { writer in
                writer.page(page) { writer, category in writer.category(category, userID: request.userID) }
            }
        }
        router.addAuthenticated(.GET, "/v1/categories/{id}") { request in
            let id = try decoding { try request.parameters.id() }
            let category = try categories.get(request.caller, id: id)
            return .json { $0.category(category, userID: request.userID) }
        }
        router.addAuthenticated(.POST, "/v1/categories") { request in
            let draft = try decoding { try CategoryDraft(json: request.request.jsonBody(), userID: request.userID) }
            let outcome = try categories.create(request.caller, draft)
            return .json(outcome.status) { $0.category(outcome.record, userID: request.userID) }
        }
        let replaceCategory: @Sendable (AuthenticatedRequest, UUID?) throws -> HTTPResponse = { request, pathID in
            let draft = try decoding { try CategoryDraft(json: request.request.jsonBody(), userID: request.userID, pathID: pathID) }
            let outcome = try categories.replace(request.caller, draft)
            return .json(outcome.status) { $0.category(outcome.record, userID: request.userID) }
        }
        router.addAuthenticated(.PUT, "/v1/categories") { try replaceCategory($0, nil) }
        router.addAuthenticated(.PUT, "/v1/categories/{id}") { request in
            try replaceCategory(request, decoding { try request.parameters.id() })
        }
        router.addAuthenticated(.DELETE, "/v1/categories/{id}") { request in
            let (id, options) = try decoding {
                (try request.parameters.id(), try DeleteOptions(body: request.request.optionalJSONBody(), query: request.request.queryItems))
            }
            _ = try categories.delete(
                request.caller, id: id, updatedAt: options.updatedAt, reassignTo: options.reassignCategoryID)
            cleanupQueued()
            return .noContent
        }

        router.addAuthenticated(.GET, "/v1/locations") { request in
            let query = try decoding { try Self.locationQuery(request.query) }
            let page = try locations.list(request.caller, query)
            return .json(capacity: 128 + 480 * page.records.count) { writer in
                writer.page(page) { writer, location in writer.location(location, userID: request.userID) }
            }
        }
        router.addAuthenticated(.GET, "/v1/locations/{id}") { request in
            let id = try decoding { try request.parameters.id() }
            let location = try locations.get(request.caller, id: id)
            return .json { $0.location(location, userID: request.userID) }
        }
        router.addAuthenticated(.POST, "/v1/locations") { request in
            let draft = try decoding { try LocationDraft(json: request.request.jsonBody(), userID: request.userID) }
            let outcome = try locations.create(request.caller, draft)
            return .json(outcome.status) { $0.location(outcome.record, userID: request.userID) }
        }
        let replaceLocation: @Sendable (AuthenticatedRequest, UUID?) throws -> HTTPResponse = { request, pathID in
            let draft = try decoding { try LocationDraft(json: request.request.jsonBody(), userID: request.userID, pathID: pathID) }
            let outcome = try locations.replace(request.caller, draft)
            return .json(outcome.status) { $0.location(outcome.record, userID: request.userID) }
        }
        router.addAuthenticated(.PUT, "/v1/locations") { try replaceLocation($0, nil) }
        router.addAuthenticated(.PUT, "/v1/locations/{id}") { request in
            try replaceLocation(request, decoding { try request.parameters.id() })
        }
        router.addAuthenticated(.DELETE, "/v1/locations/{id}") { request in
            let (id, options) = try decoding {
                (try request.parameters.id(), try DeleteOptions(body: request.request.optionalJSONBody(), query: request.request.queryItems))
            }
            _ = try locations.delete(request.caller, id: id, updatedAt: options.updatedAt)
            return .noContent
        }
    }

    /// `page`, `size`, `category_id`, `is_favorite`, `q` and `sort` of `GET /v1/locations`.
    static func locationQuery(_ query: QueryParameters) throws(APIError) -> LocationQuery {
        var search = query.string("q")
        if let text = search {
            if text.unicodeScalars.contains(where: ControlCharacter.isControl) {
                throw .invalidInput("q", "must not contain control characters")
            }
            if text.unicodeScalars.count > maxSearchLength {
                throw .invalidInput("q", "must be at most \(maxSearchLength) characters")
            }
            if text.isEmpty { search = nil }
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
