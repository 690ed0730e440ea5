import HTTPServer
import Testing
import TestSupport

/// A responder built on `Router`, as an application would write one.
struct RoutedResponder: HTTPResponder {
    typealias Handler = @Sendable (HTTPRequest, PathParameters) -> HTTPResponse
    let router: Router<Handler>

    init() {
        var router = Router<Handler>()
        router.add(.GET, "/health", { _, _ in HTTPResponse(status: .ok, body: Array("{\"status\":\"ok\"}".utf8)) })
        router.add(.GET, "/v1/locations/{id}", { _, parameters in
            HTTPResponse(status: .ok, body: Array("location \(parameters["id"] ?? "")".utf8))
        })
        router.add(.DELETE, "/v1/locations/{id}", { _, _ in HTTPResponse(status: .noContent) })
        self.router = router
    }

    func executionMode(for request: HTTPRequest) -> HTTPExecutionMode {
        request.path == "/health" ? .inline : .worker
    }

    func respond(to request: HTTPRequest, connection: ConnectionInfo) -> HTTPResponse {
        switch router.match(request.method, path: request.path) {
        case .found(let handler, let parameters, _):
            return handler(request, parameters)
        case .notFound:
            return HTTPResponse(status: .notFound, body: Array("not found".utf8))
        case .methodNotAllowed(let allowed):
            return HTTPResponse(
                status: .methodNotAllowed, headers: ["Allow": allowed.map(\.rawValue).joined(separator: ", ")])
        }
    }
}

@Suite("HTTPServer: routing over sockets")
struct HTTPServerRoutingTests {
    @Test("a Router-based responder answers 200 with parameters, 404 and 405 with Allow")
    func routes() throws {
        try withHTTPTestServer(responder: RoutedResponder()) { server in
            let client = try server.client()
            try client.send("GET /v1/locations/abc%2D1 HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(try client.readResponse().text == "location abc-1")
            try client.send("GET /v1/nothing HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(try client.readResponse().status == 404)
            try client.send("PUT /v1/locations/abc HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n")
            let notAllowed = try client.readResponse()
            #expect(notAllowed.status == 405)
            #expect(notAllowed.headers["Allow"] == "DELETE, GET, HEAD")
            try client.send("DELETE /v1/locations/abc HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(try client.readResponse().status == 204)
        }
    }

    @Test("HEAD gets the GET route's headers and Content-Length but no body")
    func head() throws {
        try withHTTPTestServer(responder: RoutedResponder()) { server in
            let client = try server.client()
            try client.send("HEAD /health HTTP/1.1\r\nHost: h\r\n\r\n")
            let head = try client.readResponse(isResponseToHead: true)
            #expect(head.status == 200)
            #expect(head.headers["Content-Length"] == "15")
            // The next response on the connection starts right after the head: no body was sent.
            try client.send("GET /health HTTP/1.1\r\nHost: h\r\n\r\n")
            let get = try client.readResponse()
            #expect(get.text == "{\"status\":\"ok\"}")
        }
    }

    @Test("an absolute-form target is routed by its path; OPTIONS * reaches the application")
    func targetForms() throws {
        try withHTTPTestServer(responder: RoutedResponder()) { server in
            let client = try server.client()
            try client.send("GET http://example.com/health HTTP/1.1\r\nHost: example.com\r\n\r\n")
            #expect(try client.readResponse().status == 200)
            try client.send("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(try client.readResponse().status == 404)
            try expectRejected("GET * HTTP/1.1\r\nHost: h\r\n\r\n", status: 400, on: server)
        }
    }
}
