import FoundationEssentials
import HTTPServer
import JSON
import Locify

extension HTTPRequest {
    /// The JSON body of a write: a non-JSON media type is E012, an empty or malformed body E001
    /// (openapi.yaml).
    func jsonBody() throws(APIError) -> JSONValue {
        guard let body = try optionalJSONBody() else {
            throw APIError(RequestDecodingError.invalid("body", "must be a JSON object"))
        }
        return body
    }

    /// The JSON body when there is one (DELETE may carry its options in a body).
    func optionalJSONBody() throws(APIError) -> JSONValue? {
        let contentType = headers["Content-Type"]
        if let contentType, !Self.isJSON(contentType) { throw .unsupportedMediaType }
        if body.isEmpty { return nil }
        if contentType == nil { throw .unsupportedMediaType }
        do {
            return try JSONParser.parse(body)
        } catch {
            throw APIError(RequestDecodingError.invalid("body", "is not valid JSON (\(error.reason) at byte \(error.offset))"))
        }
    }

    /// `application/json`, any letter case, parameters (charset) allowed.
    static func isJSON(_ contentType: String) -> Bool {
        var mediaType = contentType.utf8.prefix { $0 != UInt8(ascii: ";") }
        while let first = mediaType.first, first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") { mediaType.removeFirst() }
        while let last = mediaType.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") { mediaType.removeLast() }
        return mediaType.count == 16 && zip(mediaType, "application/json".utf8).allSatisfy { HTTPText.lowercased($0) == $1 }
    }

    /// The query string's parameters, validated one by one.
    var parameters: QueryParameters { QueryParameters(items: queryItems) }
}

/// Typed, validated query parameters: a malformed value is E001 (E002 for UUIDs) naming it
/// (`RequestDecodingError`).
/// A parameter given more than once counts with its first value, on every route (openapi.yaml):
/// every reader of the query goes through `string(_:)`.
struct QueryParameters {
    let items: [(name: String, value: String)]

    /// The first value of `name`.
    func string(_ name: String) -> String? {
        items.first { $0.name == name }?.value
    }

    func int(_ name: String, in range: ClosedRange<Int>, default defaultValue: Int) throws(RequestDecodingError) -> Int {
        guard let text = string(name) else { return defaultValue }
        guard let value = Int(text), range.contains(value) else {
            let upper = range.upperBound == Int.max ? "" : " and at most \(range.upperBound)"
            throw .invalid(name, "must be an integer of at least \(range.lowerBound)\(upper)")
        }
        return value
    }

    func uuid(_ name: String) throws(RequestDecodingError) -> UUID? {
        guard let text = string(name) else { return nil }
        guard let id = UUID(apiString: text) else { throw .invalidUUID(name) }
        return id
    }

    func bool(_ name: String) throws(RequestDecodingError) -> Bool? {
        switch string(name) {
        case nil: return nil
        case "true"?: return true
        case "false"?: return false
        default: throw .invalid(name, "must be true or false")
        }
    }

    /// `page` (>= 1, default 1; a page past the end is an empty page, not an error) and `size`
    /// (1-100, default 20).
    func pageRequest() throws(RequestDecodingError) -> PageRequest {
        PageRequest(
            page: try int("page", in: 1...Int.max, default: 1),
            size: try int("size", in: 1...PageRequest.maxSize, default: PageRequest.defaultSize))
    }
}

extension PathParameters {
    /// The `{id}` of the path as a UUID (E002 otherwise).
    func id() throws(RequestDecodingError) -> UUID {
        guard let text = self["id"], let id = UUID(apiString: text) else { throw .invalidUUID("id") }
        return id
    }
}

extension HTTPResponse {
    /// A JSON response (`application/json; charset=utf-8`).
    static func json(_ status: HTTPStatus = .ok, _ body: [UInt8]) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "application/json; charset=utf-8"], body: body)
    }

    /// A JSON response written by `write`.
    static func json(_ status: HTTPStatus = .ok, capacity: Int = 512, _ write: (inout JSONWriter) -> Void) -> HTTPResponse {
        var writer = JSONWriter(reservingCapacity: capacity)
        write(&writer)
        return .json(status, writer.bytes)
    }

    static let noContent = HTTPResponse(status: .noContent)
}
