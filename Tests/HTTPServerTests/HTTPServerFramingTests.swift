import Foundation
import HTTPServer
import Synchronization
import Testing
import TestSupport

/// Records every path it handles; answers with the body size and the first trailer.
final class RecordingResponder: HTTPResponder {
    let paths = Mutex<[String]>([])

    func respond(to request: HTTPRequest, connection: ConnectionInfo) -> HTTPResponse {
        paths.withLock { $0.append(request.path) }
        let trailer = request.trailers.first.map { " \($0.name)=\($0.value)" } ?? ""
        return HTTPResponse(status: .ok, body: Array("\(request.body.count) \(String(decoding: request.body.prefix(64), as: UTF8.self))\(trailer)".utf8))
    }
}

/// Sends `request` on a new connection; expects `status` with `Connection: close`, then the close.
func expectRejected(
    _ request: String, status: Int, on server: HTTPTestServer, sourceLocation: SourceLocation = #_sourceLocation
) throws {
    try expectRejected(Array(request.utf8), status: status, on: server, sourceLocation: sourceLocation)
}

func expectRejected(
    _ request: [UInt8], status: Int, on server: HTTPTestServer, sourceLocation: SourceLocation = #_sourceLocation
) throws {
    let client = try server.client()
    try client.send(request)
    let response = try client.readResponse()
    #expect(response.status == status, sourceLocation: sourceLocation)
    #expect(response.headers["Connection"] == "close", sourceLocation: sourceLocation)
    #expect(client.waitForClose(), "the server closes after an error", sourceLocation: sourceLocation)
}

@Suite("HTTPServer: framing and limits over sockets (RFC 9112)")
struct HTTPServerFramingTests {
    @Test("a chunked body with extensions and trailers reaches the handler decoded (RFC 9112 7.1)")
    func chunked() throws {
        try withHTTPTestServer(responder: RecordingResponder()) { server in
            let client = try server.client()
            try client.send("POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n")
            try client.send("5;x=y\r\nhello\r\n")
            try client.send("6\r\n world\r\n0\r\nX-Sum: 42\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.text == "11 hello world X-Sum=42")
        }
    }

    @Test("Expect: 100-continue gets 100 before the body is sent, then the response (RFC 9110 10.1.1)")
    func expectContinue() throws {
        try withHTTPTestServer(responder: RecordingResponder()) { server in
            let client = try server.client()
            try client.send("POST /upload HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
            let interim = try client.readResponse()
            #expect(interim.status == 100)
            try client.send("hello")
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.text == "5 hello")
        }
    }

    @Test("Expect: 100-continue with an oversized Content-Length gets 413 and no 100")
    func expectContinueTooLarge() throws {
        try withHTTPTestServer(configure: { $0.maxBodyBytes = 1000 }) { server in
            try expectRejected(
                "POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 1001\r\n\r\n", status: 413, on: server)
        }
    }

    @Test("a Content-Length over the limit is answered 413 before the body is sent")
    func earlyContentTooLarge() throws {
        try withHTTPTestServer { server in
            try expectRejected("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3000000\r\n\r\n", status: 413, on: server)
        }
    }

    @Test("a body exactly at maxBodyBytes is accepted; one byte more is 413")
    func bodyAtLimit() throws {
        try withHTTPTestServer(responder: RecordingResponder(), configure: { $0.maxBodyBytes = 1000 }) { server in
            let body = String(repeating: "x", count: 1000)
            let response = try server.roundTrip("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1000\r\n\r\n\(body)")
            #expect(response.status == 200)
            #expect(response.text.hasPrefix("1000 "))
            try expectRejected("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1001\r\n\r\n\(body)x", status: 413, on: server)
            let chunked = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
            let atLimit = try server.roundTrip(chunked + "1F4\r\n\(body.prefix(500))\r\n1F4\r\n\(body.prefix(500))\r\n0\r\n\r\n")
            #expect(atLimit.text.hasPrefix("1000 "))
            try expectRejected(chunked + "1F4\r\n\(body.prefix(500))\r\n1F5\r\n", status: 413, on: server)
        }
    }

    @Test("request smuggling attempts are refused and the smuggled request is never handled (RFC 9112 6.1, 6.3)")
    func smuggling() throws {
        let responder = RecordingResponder()
        try withHTTPTestServer(responder: responder) { server in
            let smuggled = "GET /smuggled HTTP/1.1\r\nHost: h\r\n\r\n"
            try expectRejected(
                "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled,
                status: 400, on: server)
            try expectRejected(
                "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n" + smuggled,
                status: 400, on: server)
            try expectRejected(
                "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\nContent-Length: 44\r\n\r\n" + smuggled, status: 400, on: server)
            try expectRejected("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0, 44\r\n\r\n" + smuggled, status: 400, on: server)
            for size in ["-1", "0x5", "1_0", " 5", "FFFFFFFFFFFFFFFFFFFF"] {
                try expectRejected(
                    "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n\(size)\r\nhello\r\n0\r\n\r\n" + smuggled,
                    status: 400, on: server)
            }
            try expectRejected(
                "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFF\r\nhello\r\n0\r\n\r\n", status: 413, on: server)
            try expectRejected(
                "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n" + smuggled, status: 400, on: server)
            try expectRejected(
                "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled, status: 400, on: server)
        }
        #expect(responder.paths.withLock { $0 }.isEmpty)
    }

    @Test("malformed field lines are 400: obs-fold, bare CR, NUL, space before colon (RFC 9112 2.2, 5.1, 5.2)")
    func malformedFields() throws {
        try withHTTPTestServer { server in
            try expectRejected("GET / HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n 2\r\n\r\n", status: 400, on: server)
            try expectRejected("GET / HTTP/1.1\r\nHost: h\r\nX-A: 1\r2\r\n\r\n", status: 400, on: server)
            try expectRejected(Array("GET / HTTP/1.1\r\nHost: h\r\nX-A: 1".utf8) + [0] + Array("2\r\n\r\n".utf8), status: 400, on: server)
            try expectRejected("GET / HTTP/1.1\r\nHost : h\r\n\r\n", status: 400, on: server)
            try expectRejected("GET / HTTP/1.1\nHost: h\n\n", status: 400, on: server)
        }
    }

    @Test("a missing or duplicate Host is 400 (RFC 9112 3.2)")
    func host() throws {
        try withHTTPTestServer { server in
            try expectRejected("GET / HTTP/1.1\r\n\r\n", status: 400, on: server)
            try expectRejected("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", status: 400, on: server)
        }
    }

    @Test("a request line over the limit is 414, header fields over size or count are 431")
    func limits() throws {
        try withHTTPTestServer(configure: {
            $0.maxRequestLineBytes = 100
            $0.maxHeaderBytes = 200
            $0.maxHeaderCount = 5
        }) { server in
            try expectRejected("GET /\(String(repeating: "a", count: 100)) HTTP/1.1\r\nHost: h\r\n\r\n", status: 414, on: server)
            try expectRejected("GET / HTTP/1.1\r\nHost: h\r\nX-A: \(String(repeating: "a", count: 200))\r\n\r\n", status: 431, on: server)
            try expectRejected(
                "GET / HTTP/1.1\r\nHost: h\r\n" + (1...5).map { "X-\($0): 1\r\n" }.joined() + "\r\n", status: 431, on: server)
            let fits = try server.roundTrip("GET / HTTP/1.1\r\nHost: h\r\n" + (1...4).map { "X-\($0): 1\r\n" }.joined() + "\r\n")
            #expect(fits.status == 200)
        }
    }

    @Test("the default limits hold: an 8 KiB request line and 16 KiB of fields pass, more is refused")
    func defaultLimits() throws {
        try withHTTPTestServer { server in
            // "GET " + path + " HTTP/1.1" is exactly 8192 bytes.
            let path = "/" + String(repeating: "a", count: 8192 - 14)
            #expect(try server.roundTrip("GET \(path) HTTP/1.1\r\nHost: h\r\n\r\n").status == 200)
            try expectRejected("GET \(path)a HTTP/1.1\r\nHost: h\r\n\r\n", status: 414, on: server)
            let fields = (0..<99).map { _ in "X: \(String(repeating: "b", count: 100))\r\n" }.joined()
            #expect(try server.roundTrip("GET / HTTP/1.1\r\nHost: h\r\n\(fields)\r\n").status == 200)
            try expectRejected("GET / HTTP/1.1\r\nHost: h\r\n\(fields)X: 1\r\n\r\n", status: 431, on: server)
            // "Host: h" (7 bytes) plus "X: " and 16374 bytes is exactly 16384 bytes of fields.
            let large = "X: " + String(repeating: "c", count: 16384 - 7 - 3)
            #expect(try server.roundTrip("GET / HTTP/1.1\r\nHost: h\r\n\(large)\r\n\r\n").status == 200)
            try expectRejected("GET / HTTP/1.1\r\nHost: h\r\n\(large)c\r\n\r\n", status: 431, on: server)
        }
    }

    @Test("an unsupported Transfer-Encoding is 501; an unsupported HTTP version is 505")
    func unsupported() throws {
        try withHTTPTestServer { server in
            try expectRejected("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", status: 501, on: server)
            try expectRejected("GET / HTTP/2.0\r\nHost: h\r\n\r\n", status: 505, on: server)
            try expectRejected("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", status: 505, on: server)
        }
    }

    @Test("the application renders framing errors; the server adds Connection: close")
    func customErrorRendering() throws {
        struct JSONErrors: HTTPResponder {
            func respond(to request: HTTPRequest, connection: ConnectionInfo) -> HTTPResponse {
                HTTPResponse(status: .ok)
            }
            func response(for error: HTTPRequestError) -> HTTPResponse {
                HTTPResponse(
                    status: error.status, headers: ["Content-Type": "application/json"],
                    body: Array("{\"error\":{\"code\":\"E010\",\"status\":\(error.status.code)}}".utf8))
            }
        }
        try withHTTPTestServer(responder: JSONErrors(), configure: { $0.maxBodyBytes = 10 }) { server in
            let client = try server.client()
            try client.send("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 413)
            #expect(response.text == "{\"error\":{\"code\":\"E010\",\"status\":413}}")
            #expect(response.headers["Content-Type"] == "application/json")
            #expect(response.headers["Connection"] == "close")
        }
    }

    @Test("the default error rendering is a plain-text status line")
    func defaultErrorRendering() throws {
        try withHTTPTestServer { server in
            let response = try server.roundTrip("GARBAGE\r\n\r\n")
            #expect(response.status == 400)
            #expect(response.text == "400 Bad Request\n")
            #expect(response.headers["Content-Type"] == "text/plain; charset=utf-8")
        }
    }
}
