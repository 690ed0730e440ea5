import Foundation
import JSON
import Locify
import LocifyRules
import Postgres
import Primitives
import Synchronization
import Testing
import TestSupport
import TestSupportDatabase
import TestSupportServer

// Shared by the end-to-end tests of categories, locations and isolation (openapi.yaml
// and 11): one server for the whole process, a fresh user per test, request builders, and the
// expectations every rule test makes (status, error code, `details` field, body).

/// The `TestServer`s shared by the resource tests of this process: one in process (`get`), one
/// over sockets (`live`) for the tests whose subject is the connection. Every test acts as its
/// own fresh user, so tests running in parallel never see each other's records. Tests that need a
/// special configuration (a frozen clock) start their own server instead.
enum SharedServer {
    private static let inProcess = Mutex<TestServer?>(nil)
    private static let overSockets = Mutex<TestServer?>(nil)

    /// The shared in-process server, started on first use (and left running until the process
    /// exits).
    static func get() throws -> TestServer {
        try shared(inProcess) { try TestServer.start(.inProcess) }
    }

    /// The shared server over sockets, started on first use.
    static func live() throws -> TestServer {
        try shared(overSockets) { try TestServer.start() }
    }

    private static func shared(_ instance: borrowing Mutex<TestServer?>, start: () throws -> TestServer) throws -> TestServer {
        try instance.withLock { server in
            if let server { return server }
            let started = try start()
            server = started
            return started
        }
    }
}

/// A user of a test server: a unique uid and a token minted once for it.
struct APIUser: Sendable {
    let server: TestServer
    let uid: String
    let token: String

    /// A user nobody else uses, on the shared server unless `server` is given.
    static func fresh(on server: TestServer? = nil) throws -> APIUser {
        let server = try server ?? SharedServer.get()
        let uid = "res-" + UUID().uuidString.lowercased().prefix(13)
        return APIUser(server: server, uid: String(uid), token: try server.token(for: String(uid)))
    }

    func send(
        _ method: String, _ target: String, json: JSONValue? = nil, body: [UInt8]? = nil,
        headers: [(String, String)] = []
    ) throws -> TestResponse {
        try server.request(method, target, token: token, json: json, body: body, headers: headers)
    }

    func get(_ target: String) throws -> TestResponse { try send("GET", target) }
    func post(_ target: String, _ json: JSONValue) throws -> TestResponse { try send("POST", target, json: json) }
    func put(_ target: String, _ json: JSONValue) throws -> TestResponse { try send("PUT", target, json: json) }
    func delete(_ target: String, _ json: JSONValue? = nil) throws -> TestResponse {
        try send("DELETE", target, json: json)
    }

    /// Creates a category (expecting 201) and returns the record.
    @discardableResult
    func createCategory(
        _ id: String = newID(), name: String = "Category", _ extra: JSONObject = [:],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> JSONObject {
        let response = try post("/v1/categories", categoryBody(id: id, name: name, extra))
        #expect(response.status == 201, "create category: \(response.text)", sourceLocation: sourceLocation)
        return response.object
    }

    /// Creates a category stamped `updatedAtMinute` on the client clock (expecting 201).
    @discardableResult
    func createCategory(
        _ id: String, name: String = "Category", updatedAtMinute minute: Int, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> JSONObject {
        try createCategory(id, name: name, ["updated_at": .string(clientTime(minute))], sourceLocation: sourceLocation)
    }

    /// Creates a location in `categoryID` (expecting 201) and returns the record.
    @discardableResult
    func createLocation(
        _ id: String = newID(), in categoryID: String, name: String = "Place", _ extra: JSONObject = [:],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> JSONObject {
        let response = try post("/v1/locations", locationBody(id: id, categoryID: categoryID, name: name, extra))
        #expect(response.status == 201, "create location: \(response.text)", sourceLocation: sourceLocation)
        return response.object
    }

    /// `column` of one of this user's stored rows (tombstones included) as text, straight from
    /// the database: what the API does not show, such as a tombstone's version.
    func storedColumn(_ table: String, _ id: String, _ column: String) throws -> String? {
        try server.pool.withConnection { connection in
            let rows = try connection.query(
                "SELECT \(unsafeSQL: column)::text FROM \(unsafeSQL: table) WHERE user_id = \(uid) AND id = \(id)::uuid")
            guard let row = rows.first else { throw TestDatabaseError("no \(table) row \(id) for \(uid)") }
            return try row.decode(0, as: String?.self)
        }
    }

    /// Waits (60 s at most) until the server has settled this user's pending cascades: the
    /// locations of a cascade are turned into tombstones after the delete answered (`PendingCascades`).
    func waitForSettledCascades(sourceLocation: SourceLocation = #_sourceLocation) throws {
        var settled = false
        for _ in 0..<1200 where !settled {
            settled = try server.pool.withConnection { connection in
                try connection.query("SELECT hiding = '{}' FROM users WHERE id = \(uid)").first?.decode(0, as: Bool.self) ?? true
            }
            if !settled { Thread.sleep(forTimeInterval: 0.05) }
        }
        #expect(settled, "the cascade worker did not settle the cascade", sourceLocation: sourceLocation)
    }

    /// The stored `version` of one of this user's rows (tombstones included).
    func storedVersion(_ table: String, _ id: String) throws -> Int? {
        try storedColumn(table, id, "version").flatMap { Int($0) }
    }
}

/// A fresh lower-case UUID.
func newID() -> String { UUID().uuidString.lowercased() }

/// A past client clock reading: `minutes` (and `milliseconds`) after 2025-03-01T12:00:00.000Z,
/// in the API's output form.
func clientTime(_ minutes: Int, milliseconds: Int = 0) -> String {
    Timestamp(milliseconds: baseClientTime + Int64(minutes) * 60_000 + Int64(milliseconds)).rfc3339
}

private let baseClientTime: Int64 = 1_740_830_400_000  // 2025-03-01T12:00:00.000Z

/// The four default categories: name and id (UUIDv5 of `locify:default-category:<Name>`).
let defaultCategories: [(name: String, id: String)] = [
    ("Restaurant", "1f3599be-6e0e-5cf8-aa59-b97dfdc46aec"),
    ("Cafe", "a1050188-e456-5998-8293-a282220c9930"),
    ("Tourist Attraction", "6c2f54c9-801e-5a83-bd62-9cb6d70037af"),
    ("Favorites", "663e8afc-3c33-5d02-920a-fb4e755a6efb"),
]

// MARK: - Request bodies

/// A category body; `extra` members are added (or replace the defaults).
func categoryBody(id: String?, name: String? = "Food", _ extra: JSONObject = [:]) -> JSONValue {
    var object = JSONObject()
    if let id { object["id"] = .string(id) }
    if let name { object["name"] = .string(name) }
    for (key, value) in extra { object[key] = value }
    return .object(object)
}

/// A location body; `extra` members are added (or replace the defaults).
func locationBody(
    id: String?, categoryID: String?, name: String? = "Place", latitude: Double = 48.858844,
    longitude: Double = 2.294351, _ extra: JSONObject = [:]
) -> JSONValue {
    var object = JSONObject()
    if let id { object["id"] = .string(id) }
    if let categoryID { object["category_id"] = .string(categoryID) }
    if let name { object["name"] = .string(name) }
    object["latitude"] = .number(latitude)
    object["longitude"] = .number(longitude)
    for (key, value) in extra { object[key] = value }
    return .object(object)
}

/// `body` with `key` removed (to test absent fields).
func removing(_ key: String, from body: JSONValue) -> JSONValue {
    guard case .object(var object) = body else { return body }
    object[key] = nil
    return .object(object)
}

/// `body` with `key` set to `value` (`.null` included).
func setting(_ key: String, _ value: JSONValue, in body: JSONValue) -> JSONValue {
    guard case .object(var object) = body else { return body }
    object[key] = value
    return .object(object)
}

/// Percent-encodes a query parameter value.
func queryEncoded(_ value: String) -> String {
    var allowed = CharacterSet.alphanumerics
    allowed.insert(charactersIn: "-._~")
    return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
}

// MARK: - Expected records

/// The full JSON of a category as the API returns it.
func categoryJSON(
    id: String, user: APIUser, name: String, icon: String? = nil, isDefault: Bool = false, locationCount: Int = 0,
    version: Int = 1, createdAt: String, updatedAt: String
) -> JSONObject {
    [
        "id": .string(id), "user_id": .string(user.uid), "name": .string(name), "icon": icon.map(JSONValue.string) ?? .null,
        "is_default": .bool(isDefault), "location_count": .number(Double(locationCount)), "sync_status": "synced",
        "version": .number(Double(version)), "created_at": .string(createdAt), "updated_at": .string(updatedAt),
    ]
}

/// The full JSON of a location as the API returns it.
func locationJSON(
    id: String, user: APIUser, categoryID: String, name: String = "Place", address: String? = nil,
    description: String? = nil, latitude: Double = 48.858844, longitude: Double = 2.294351, isFavorite: Bool = false,
    imageURLs: [String] = [], version: Int = 1, createdAt: String, updatedAt: String
) -> JSONObject {
    [
        "id": .string(id), "user_id": .string(user.uid), "category_id": .string(categoryID), "name": .string(name),
        "address": address.map(JSONValue.string) ?? .null, "description": description.map(JSONValue.string) ?? .null,
        "latitude": .number(latitude), "longitude": .number(longitude), "is_favorite": .bool(isFavorite),
        "image_urls": .array(imageURLs.map(JSONValue.string)), "sync_status": "synced", "version": .number(Double(version)),
        "created_at": .string(createdAt), "updated_at": .string(updatedAt),
    ]
}

/// The tombstone a conflict carries: `{ "id", "deleted": true, "deleted_at" }`.
func tombstoneJSON(id: String, deletedAt: String) -> JSONObject {
    ["id": .string(id), "deleted": true, "deleted_at": .string(deletedAt)]
}

/// Whether `text` has the API's timestamp form `YYYY-MM-DDTHH:MM:SS.sssZ`.
func isAPITimestamp(_ text: String?) -> Bool {
    guard let text else { return false }
    let bytes = Array(text.utf8)
    guard bytes.count == 24 else { return false }
    let layout = Array("dddd-dd-ddTdd:dd:dd.dddZ".utf8)
    for (byte, expected) in zip(bytes, layout) {
        if expected == UInt8(ascii: "d") {
            guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else { return false }
        } else if byte != expected {
            return false
        }
    }
    return Timestamp(rfc3339: text) != nil
}

/// The record's timestamp field as a `Timestamp`.
func timestamp(_ object: JSONObject, _ field: String) -> Timestamp? {
    object[field]?.stringValue.flatMap { Timestamp(rfc3339: $0) }
}

// MARK: - Expectations

/// An error response: `status`, `error.code`, a non-empty `error.message`, `details[0].field`
/// equal to `field` (or no details when nil), JSON content type, and no `data` member.
func expectError(
    _ response: TestResponse, _ status: Int, _ code: String, field: String? = nil,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(response.status == status, "status; body: \(response.text)", sourceLocation: sourceLocation)
    #expect(response.errorCode == code, "code; body: \(response.text)", sourceLocation: sourceLocation)
    let error = response.object["error"]?.objectValue
    let message = error?["message"]?.stringValue ?? ""
    #expect(!message.isEmpty, "error.message", sourceLocation: sourceLocation)
    if let field {
        #expect(response.object["error"]?.objectValue?["details"]?.arrayValue?.count == 1, "one detail", sourceLocation: sourceLocation)
        #expect(response.errorField == field, "details field; body: \(response.text)", sourceLocation: sourceLocation)
        let detail = error?["details"]?.arrayValue?.first?.objectValue
        let detailMessage = detail?["message"]?.stringValue ?? ""
        #expect(!detailMessage.isEmpty, "details message", sourceLocation: sourceLocation)
    }
    #expect(response.object["data"] == nil, "no data beside the error", sourceLocation: sourceLocation)
    #expect(
        response.headers["Content-Type"] == "application/json; charset=utf-8", "content type",
        sourceLocation: sourceLocation)
}

/// A 409 E008 whose `data` (beside `error`) is exactly `expected`.
func expectConflict(_ response: TestResponse, data expected: JSONObject, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(response.status == 409, "status; body: \(response.text)", sourceLocation: sourceLocation)
    #expect(response.errorCode == "E008", "code; body: \(response.text)", sourceLocation: sourceLocation)
    #expect(Set(response.object.keys) == ["error", "data"], "body members", sourceLocation: sourceLocation)
    #expect(response.object["data"]?.objectValue == expected, "data; body: \(response.text)", sourceLocation: sourceLocation)
}

/// A 204 with no body.
func expectNoContent(_ response: TestResponse, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(response.status == 204, "status; body: \(response.text)", sourceLocation: sourceLocation)
    #expect(response.body.isEmpty, "no body", sourceLocation: sourceLocation)
}

/// A 200 or 201 whose body is exactly `expected`.
func expectRecord(
    _ response: TestResponse, _ status: Int, _ expected: JSONObject, sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(response.status == status, "status; body: \(response.text)", sourceLocation: sourceLocation)
    #expect(response.object == expected, "body: \(response.text)", sourceLocation: sourceLocation)
}

// MARK: - Rules shared by both resources

/// The two record endpoints; the write table of openapi.yaml holds for both.
enum Resource: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case categories
    case locations

    var testDescription: String { "/v1/\(rawValue)" }
    /// The collection path, e.g. `/v1/categories`.
    var path: String { "/v1/\(rawValue)" }
    /// The table holding the records.
    var table: String { rawValue }
}

/// A fresh user ready to write records of `resource` (locations get a home category).
struct ResourceFixture: Sendable {
    let resource: Resource
    let user: APIUser
    /// The category locations are written to.
    let categoryID: String

    init(_ resource: Resource, on server: TestServer? = nil) throws {
        self.resource = resource
        user = try APIUser.fresh(on: server)
        categoryID = newID()
        if resource == .locations {
            try user.createCategory(categoryID, name: "Home", ["updated_at": .string(clientTime(-1000))])
        }
    }

    /// A write body: `name` is the content that differs between versions; `updatedAt` nil omits it.
    func body(id: String?, name: String = "Name", updatedAt: String?, _ extra: JSONObject = [:]) -> JSONValue {
        var members = extra
        if let updatedAt { members["updated_at"] = .string(updatedAt) }
        switch resource {
        case .categories: return categoryBody(id: id, name: name, members)
        case .locations: return locationBody(id: id, categoryID: categoryID, name: name, members)
        }
    }

    /// The record as the API returns it.
    func record(id: String, name: String = "Name", version: Int = 1, createdAt: String, updatedAt: String) -> JSONObject {
        switch resource {
        case .categories:
            return categoryJSON(id: id, user: user, name: name, version: version, createdAt: createdAt, updatedAt: updatedAt)
        case .locations:
            return locationJSON(
                id: id, user: user, categoryID: categoryID, name: name, version: version, createdAt: createdAt, updatedAt: updatedAt)
        }
    }

    func post(_ body: JSONValue) throws -> TestResponse { try user.post(resource.path, body) }
    func put(_ body: JSONValue) throws -> TestResponse { try user.put(resource.path, body) }
    func put(id: String, _ body: JSONValue) throws -> TestResponse { try user.put("\(resource.path)/\(id)", body) }
    func get(id: String) throws -> TestResponse { try user.get("\(resource.path)/\(id)") }
    func delete(id: String, query: String = "", _ body: JSONValue? = nil) throws -> TestResponse {
        try user.delete("\(resource.path)/\(id)\(query)", body)
    }

    /// Creates the record `id` named `name` at client minute `minute` (expecting 201); returns it.
    @discardableResult
    func create(
        _ id: String, name: String = "Name", minute: Int, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> JSONObject {
        let response = try post(body(id: id, name: name, updatedAt: clientTime(minute)))
        #expect(response.status == 201, "create: \(response.text)", sourceLocation: sourceLocation)
        return response.object
    }

    /// The stored version of `id`, tombstones included.
    func storedVersion(_ id: String) throws -> Int? { try user.storedVersion(resource.table, id) }
}
