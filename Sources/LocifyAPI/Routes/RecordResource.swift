import FoundationEssentials
import JSON
import Locify

/// A service served as a REST collection (`/v1/categories`, `/v1/locations`): what
/// `ResourceRoutes.register(_:at:in:afterDelete:)` needs to answer GET (list and one), POST, PUT,
/// PATCH and DELETE for it. The routes are generic over it, so each collection's handlers call its
/// service directly.
protocol RecordResource: Sendable {
    /// The record the collection holds.
    associatedtype Record: Sendable
    /// A validated write of one record.
    associatedtype Draft
    /// A validated write of some fields of one record.
    associatedtype Patch
    /// What the list's query parameters select.
    associatedtype ListQuery

    /// About how many bytes one record takes in a list response (the buffer's initial capacity).
    static var listBytesPerRecord: Int { get }
    /// Reads the list's query parameters.
    static func listQuery(_ query: QueryParameters) throws(RequestDecodingError) -> ListQuery
    /// Decodes a POST or PUT body; `pathID` is the id of `PUT .../{id}`.
    static func draft(json body: JSONValue, userID: String, pathID: UUID?) throws(RequestDecodingError) -> Draft
    /// Decodes a PATCH body; `pathID` is the path's id.
    static func patch(json body: JSONValue, userID: String, pathID: UUID) throws(RequestDecodingError) -> Patch
    /// Writes the record's JSON object.
    static func encode(_ record: Record, userID: String, to writer: inout JSONWriter)

    /// One page of the caller's live records.
    func list(_ caller: Caller, _ query: ListQuery) throws -> Page<Record>
    /// The caller's live record `id`.
    func get(_ caller: Caller, id: UUID) throws -> Record
    /// POST: create, or upsert under last-write-wins.
    func create(_ caller: Caller, _ draft: Draft) throws -> WriteOutcome<Record>
    /// PUT: replace under last-write-wins.
    func replace(_ caller: Caller, _ draft: Draft) throws -> WriteOutcome<Record>
    /// PATCH: write the fields carried, each under last-write-wins.
    func patch(_ caller: Caller, _ patch: Patch) throws -> WriteOutcome<Record>
    /// DELETE with the request's options.
    func delete(_ caller: Caller, id: UUID, options: DeleteOptions) throws
}

extension CategoryService: RecordResource {
    static let listBytesPerRecord = 320

    static func listQuery(_ query: QueryParameters) throws(RequestDecodingError) -> PageRequest {
        try query.pageRequest()
    }

    static func draft(json body: JSONValue, userID: String, pathID: UUID?) throws(RequestDecodingError) -> CategoryDraft {
        try CategoryDraft(json: body, userID: userID, pathID: pathID)
    }

    static func patch(json body: JSONValue, userID: String, pathID: UUID) throws(RequestDecodingError) -> CategoryPatch {
        try CategoryPatch(json: body, userID: userID, pathID: pathID)
    }

    static func encode(_ record: Category, userID: String, to writer: inout JSONWriter) {
        writer.category(record, userID: userID)
    }

    func delete(_ caller: Caller, id: UUID, options: DeleteOptions) throws {
        _ = try delete(caller, id: id, updatedAt: options.updatedAt, reassignTo: options.reassignCategoryID)
    }
}

extension LocationService: RecordResource {
    static let listBytesPerRecord = 480

    static func listQuery(_ query: QueryParameters) throws(RequestDecodingError) -> LocationQuery {
        try ResourceRoutes.locationQuery(query)
    }

    static func draft(json body: JSONValue, userID: String, pathID: UUID?) throws(RequestDecodingError) -> LocationDraft {
        try LocationDraft(json: body, userID: userID, pathID: pathID)
    }

    static func patch(json body: JSONValue, userID: String, pathID: UUID) throws(RequestDecodingError) -> LocationPatch {
        try LocationPatch(json: body, userID: userID, pathID: pathID)
    }

    static func encode(_ record: Location, userID: String, to writer: inout JSONWriter) {
        writer.location(record, userID: userID)
    }

    func delete(_ caller: Caller, id: UUID, options: DeleteOptions) throws {
        _ = try delete(caller, id: id, updatedAt: options.updatedAt)
    }
}
