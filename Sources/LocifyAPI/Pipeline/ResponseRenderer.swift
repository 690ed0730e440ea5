import HTTPServer
import Logging

/// The render stage of the pipeline: an error of any layer becomes its API error response
/// (`APIError.mapping`; an unknown one a logged 500 S002), and every response gets its
/// `X-Request-Id` and the hardening headers.
struct ResponseRenderer: Sendable {
    let logger: Logger

    /// The response of `error`, for `userID`'s request `requestID`.
    func response(for error: any Error, userID: String?, requestID: String) -> HTTPResponse {
        let apiError: APIError
        if let mapped = APIError.mapping(error) {
            apiError = mapped
        } else {
            logger.error(
                "unexpected error", metadata: ["request_id": "\(requestID)", "error": "\(String(reflecting: error))"])
            apiError = .internalError
        }
        return Self.response(apiError, userID: userID)
    }

    /// Errors the HTTP layer detects before a request exists: the two of the API's table as JSON,
    /// malformed HTTP as plain text. Every response carries a fresh `X-Request-Id` (openapi.yaml).
    func response(for error: HTTPRequestError) -> HTTPResponse {
        var response: HTTPResponse
        if let apiError = APIError(error) {
            response = Self.response(apiError, userID: nil)
        } else {
            response = HTTPResponse(
                status: error.status, headers: ["Content-Type": "text/plain; charset=utf-8"],
                body: Array("\(error.status.code) \(error.status.reasonPhrase)\n".utf8))
        }
        stamp(&response, requestID: RequestID.forRequest(clientValue: nil))
        return response
    }

    /// Sets `X-Request-Id` and the headers every response carries (OWASP API8): clients must not
    /// sniff another media type from the body, and no cache may keep a response, which may hold a
    /// user's records.
    func stamp(_ response: inout HTTPResponse, requestID: String) {
        response.headers.set("X-Request-Id", requestID)
        response.headers.set("X-Content-Type-Options", "nosniff")
        response.headers.set("Cache-Control", "no-store")
    }

    private static func response(_ apiError: APIError, userID: String?) -> HTTPResponse {
        var response = HTTPResponse.json(apiError.status, apiError.encodedBody(userID: userID))
        for (name, value) in apiError.headers { response.headers.add(name, value) }
        return response
    }
}
