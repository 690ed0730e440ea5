import Foundation
import HTTPServer
import Synchronization
import Testing
import TestSupport

/// Answers with the connection id and the path, optionally sleeping first (`?sleep=ms`).
let connectionEcho = HTTPClosureResponder { request, connection in
    if let sleep = request.queryItem("sleep").flatMap(Int.init) {
        usleep(UInt32(sleep * 1000))
    }
    return HTTPResponse(status: .ok, body: Array("\(connection.id) \(request.path)".utf8))
}

@Suite("HTTPServer: keep-alive and pipelining (RFC 9112 9)")
struct HTTPServerConnectionTests {
    @Test("two requests travel on one HTTP/1.1 connection (keep-alive by default)")
    func keepAlive() throws {
        try withHTTPTestServer(responder: connectionEcho) { server in
            let client = try server.client()
            try client.send("GET /one HTTP/1.1\r\nHost: h\r\n\r\n")
            let first = try client.readResponse()
            try client.send("GET /two HTTP/1.1\r\nHost: h\r\n\r\n")
            let second = try client.readResponse()
            let firstID = first.text.split(separator: " ").first
            #expect(first.text.hasSuffix(" /one"))
            #expect(second.text == "\(firstID ?? "") /two")
            #expect(first.headers["Connection"] == nil)
        }
    }

    @Test("three pipelined requests in one write get three responses in order, the slow first one included")
    func pipelining() throws {
        try withHTTPTestServer(responder: connectionEcho) { server in
            let client = try server.client()
            try client.send(
                "GET /1?sleep=300 HTTP/1.1\r\nHost: h\r\n\r\n"
                    + "POST /2 HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc"
                    + "GET /3 HTTP/1.1\r\nHost: h\r\n\r\n")
            let paths = try (0..<3).map { _ in try client.readResponse().text.split(separator: " ").last.map(String.init) }
            #expect(paths == ["/1", "/2", "/3"])
        }
    }

    @Test("pipelined inline requests are answered in order, mixed with worker requests")
    func pipeliningMixed() throws {
        let responder = HTTPClosureResponder(mode: { $0.path.hasPrefix("/inline") ? .inline : .worker }) { request, _ in
            if request.path == "/worker-slow" { usleep(200_000) }
            return HTTPResponse(status: .ok, body: Array(request.path.utf8))
        }
        try withHTTPTestServer(responder: responder) { server in
            let client = try server.client()
            let paths = ["/inline-1", "/worker-slow", "/inline-2", "/inline-3", "/worker", "/inline-4"]
            try client.send(paths.map { "GET \($0) HTTP/1.1\r\nHost: h\r\n\r\n" }.joined())
            let answers = try paths.map { _ in try client.readResponse().text }
            #expect(answers == paths)
        }
    }

    @Test("hundreds of pipelined requests split across reads are all answered in order")
    func longPipeline() throws {
        let responder = HTTPClosureResponder(mode: { $0.path.hasSuffix("0") ? .worker : .inline }) { request, _ in
            HTTPResponse(status: .ok, body: Array(request.path.utf8))
        }
        try withHTTPTestServer(responder: responder, configure: { $0.maxBufferedInputBytes = 1024 }) { server in
            let client = try server.client()
            let count = 500
            let requests = (0..<count).map { "GET /r\($0) HTTP/1.1\r\nHost: h\r\nX-Pad: \(String(repeating: "x", count: $0 % 50))\r\n\r\n" }
            let writer = BackgroundThread { try? client.send(requests.joined()) }
            let answers = try (0..<count).map { _ in try client.readResponse().text }
            #expect(answers == (0..<count).map { "/r\($0)" })
            writer.wait()
        }
    }

    @Test("HTTP/1.0 without keep-alive gets Connection: close and the connection closes")
    func http10Closes() throws {
        try withHTTPTestServer(responder: connectionEcho) { server in
            let client = try server.client()
            try client.send("GET /old HTTP/1.0\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.headers["Connection"] == "close")
            #expect(client.waitForClose())
        }
    }

    @Test("HTTP/1.0 with Connection: keep-alive is kept alive and told so")
    func http10KeepAlive() throws {
        try withHTTPTestServer(responder: connectionEcho) { server in
            let client = try server.client()
            try client.send("GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            let first = try client.readResponse()
            #expect(first.headers["Connection"] == "keep-alive")
            try client.send("GET /b HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            let second = try client.readResponse()
            #expect(second.text.hasSuffix(" /b"))
            #expect(first.text.split(separator: " ").first == second.text.split(separator: " ").first)
        }
    }

    @Test("Connection: close from the client, or from the application, closes after the response")
    func connectionClose() throws {
        try withHTTPTestServer(responder: connectionEcho) { server in
            let client = try server.client()
            try client.send("GET /bye HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.headers["Connection"] == "close")
            #expect(client.waitForClose())
        }
        let closing = HTTPClosureResponder { _, _ in HTTPResponse(status: .ok, headers: ["Connection": "close"]) }
        try withHTTPTestServer(responder: closing) { server in
            let client = try server.client()
            try client.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.headers.values(for: "Connection") == ["close"])
            #expect(client.waitForClose())
        }
    }

    @Test("responses carry Content-Length always, none for 204; Transfer-Encoding from the app is dropped")
    func contentLength() throws {
        let responder = HTTPClosureResponder { request, _ in
            switch request.path {
            case "/empty": return HTTPResponse(status: .ok)
            case "/no-content": return HTTPResponse(status: .noContent, headers: ["Content-Length": "5"])
            default:
                return HTTPResponse(
                    status: .ok, headers: ["Content-Length": "999", "Transfer-Encoding": "chunked"], body: Array("abc".utf8))
            }
        }
        try withHTTPTestServer(responder: responder) { server in
            let client = try server.client()
            try client.send("GET /empty HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(try client.readResponse().headers["Content-Length"] == "0")
            try client.send("GET /no-content HTTP/1.1\r\nHost: h\r\n\r\n")
            let noContent = try client.readResponse()
            #expect(noContent.status == 204)
            #expect(noContent.headers["Content-Length"] == nil)
            try client.send("GET /other HTTP/1.1\r\nHost: h\r\n\r\n")
            let other = try client.readResponse()
            #expect(other.headers.values(for: "Content-Length") == ["3"])
            #expect(other.headers["Transfer-Encoding"] == nil)
            #expect(other.text == "abc")
        }
    }

    @Test("header values that could split the response are dropped")
    func responseSplitting() throws {
        let responder = HTTPClosureResponder { _, _ in
            HTTPResponse(status: .ok, headers: ["X-Good": "yes", "X-Bad": "a\r\nSet-Cookie: evil=1", "Bad Name": "x"])
        }
        try withHTTPTestServer(responder: responder) { server in
            let response = try server.roundTrip("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(response.headers["X-Good"] == "yes")
            #expect(response.headers["X-Bad"] == nil)
            #expect(response.headers["Set-Cookie"] == nil)
            #expect(response.headers["Bad Name"] == nil)
        }
    }

    @Test("a large response (bigger than the socket buffer) arrives whole")
    func largeResponse() throws {
        let big = (0..<(3 * 1024 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let responder = HTTPClosureResponder { _, _ in HTTPResponse(status: .ok, body: big) }
        try withHTTPTestServer(responder: responder) { server in
            let client = try server.client()
            try client.send("GET /big HTTP/1.1\r\nHost: h\r\n\r\nGET /big HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(try client.readResponse().body == big)
            #expect(try client.readResponse().body == big)
        }
    }
}
