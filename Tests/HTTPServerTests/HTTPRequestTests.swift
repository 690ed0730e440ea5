import HTTPServer
import Testing

@Suite("HTTPRequest")
struct HTTPRequestTests {
    @Test("query items are split on & and =, percent-decoded with + as space")
    func queryItems() {
        let request = HTTPRequest(method: .GET, target: "/p?q=caf%C3%A9+au+lait&flag&empty=&a%3Db=c%26d&&x=%zz%4")
        #expect(request.path == "/p")
        let items = request.queryItems.map { "\($0.name)=\($0.value)" }
        #expect(items == ["q=café au lait", "flag=", "empty=", "a=b=c&d", "x=%zz%4"])
        #expect(request.queryItem("flag") == "")
        #expect(request.queryItem("nope") == nil)
    }

    @Test("no query, or an empty one, has no items")
    func noQuery() {
        #expect(HTTPRequest(method: .GET, target: "/p").queryItems.isEmpty)
        #expect(HTTPRequest(method: .GET, target: "/p?").queryItems.isEmpty)
        #expect(HTTPRequest(method: .GET, target: "/p?").query == "")
        #expect(HTTPRequest(method: .GET, target: "/p").query == nil)
    }

    @Test("keep-alive: HTTP/1.1 unless close; HTTP/1.0 only with keep-alive (RFC 9112 9.3)")
    func keepAlive() {
        #expect(HTTPRequest(method: .GET, target: "/").wantsKeepAlive)
        #expect(!HTTPRequest(method: .GET, target: "/", headers: ["Connection": "close"]).wantsKeepAlive)
        #expect(!HTTPRequest(method: .GET, target: "/", version: .http1_0).wantsKeepAlive)
        #expect(HTTPRequest(method: .GET, target: "/", version: .http1_0, headers: ["Connection": "Keep-Alive"]).wantsKeepAlive)
    }
}
