import HTTPServer
import Testing

@Suite("HTTPHeaders")
struct HTTPHeadersTests {
    @Test("lookups ignore the case of names and return the first value")
    func caseInsensitiveLookup() {
        let headers: HTTPHeaders = ["Content-Type": "text/plain", "X-A": "1", "x-a": "2"]
        #expect(headers["content-type"] == "text/plain")
        #expect(headers["X-A"] == "1")
        #expect(headers.values(for: "X-a") == ["1", "2"])
        #expect(headers.contains("CONTENT-TYPE"))
        #expect(!headers.contains("Content-Length"))
        #expect(headers["missing"] == nil)
    }

    @Test("duplicates are kept in order; add appends")
    func duplicatesKept() {
        var headers = HTTPHeaders()
        headers.add("Set-Cookie", "a=1")
        headers.add("Set-Cookie", "b=2")
        #expect(headers.count == 2)
        #expect(headers.map(\.value) == ["a=1", "b=2"])
    }

    @Test("set replaces every field of that name at the first one's place")
    func setReplacesAll() {
        var headers: HTTPHeaders = ["A": "1", "B": "x", "a": "2"]
        headers.set("a", "3")
        #expect(headers.map(\.name) == ["a", "B"])
        #expect(headers["A"] == "3")
        headers.set("C", "4")
        #expect(headers.map(\.name) == ["a", "B", "C"])
    }

    @Test("remove drops every field of that name")
    func removeAll() {
        var headers: HTTPHeaders = ["A": "1", "B": "x", "a": "2"]
        headers.remove("A")
        #expect(headers.map(\.name) == ["B"])
    }

    @Test("containsToken reads comma-separated values case-insensitively")
    func tokens() {
        let headers: HTTPHeaders = ["Connection": "Keep-Alive , Upgrade"]
        #expect(headers.containsToken("keep-alive", in: "connection"))
        #expect(headers.containsToken("upgrade", in: "Connection"))
        #expect(!headers.containsToken("close", in: "Connection"))
    }
}
