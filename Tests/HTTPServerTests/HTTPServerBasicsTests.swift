import Foundation
import HTTPServer
import Testing
import TestSupport

/// The kernel's name of the calling thread (what `top -H` shows).
func currentThreadName() -> String {
    let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "?"
    return name.trimmingCharacters(in: .whitespacesAndNewlines)
}

@Suite("HTTPServer: basics over sockets")
struct HTTPServerBasicsTests {
    @Test("a GET is answered with Content-Length and Date; the port is ephemeral")
    func simpleGet() throws {
        try withHTTPTestServer { server in
            #expect(server.port > 0)
            let response = try server.roundTrip("GET /hello?x=1 HTTP/1.1\r\nHost: localhost\r\n\r\n")
            #expect(response.status == 200)
            #expect(response.text == "GET /hello?x=1 0")
            #expect(response.headers["Content-Length"] == "16")
            #expect(response.headers["Date"]?.hasSuffix(" GMT") == true)
            #expect(response.headers["Connection"] == nil)
        }
    }

    @Test("inline handlers answer on the I/O thread")
    func inline() throws {
        let responder = HTTPClosureResponder(mode: { _ in .inline }) { _, _ in
            HTTPResponse(status: .ok, body: Array("inline \(currentThreadName())".utf8))
        }
        try withHTTPTestServer(responder: responder) { server in
            let response = try server.roundTrip("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(response.text.hasPrefix("inline http-io-"))
        }
    }

    @Test("worker handlers run on the worker pool")
    func worker() throws {
        let responder = HTTPClosureResponder { _, _ in
            HTTPResponse(status: .ok, body: Array(currentThreadName().utf8))
        }
        try withHTTPTestServer(responder: responder) { server in
            let response = try server.roundTrip("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(response.text.hasPrefix("http-worker-"))
        }
    }
}
