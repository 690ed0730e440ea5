import Primitives
import Synchronization
import Testing

@testable import HTTPServer

@Suite("HTTPResponseSerializer")
struct HTTPResponseSerializerTests {
    let date = Array("Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n".utf8)

    func text(_ response: HTTPResponse, head: Bool = false, connection: HTTPResponseSerializer.ConnectionDirective = .persistentDefault) -> String {
        String(decoding: HTTPResponseSerializer.serialize(response, isResponseToHead: head, connection: connection, dateLine: date).joined(), as: UTF8.self)
    }

    @Test("status line, application fields in order, Content-Length, Date, then the body")
    func layout() {
        let response = HTTPResponse(status: .created, headers: ["X-B": "2", "X-A": "1"], body: Array("hi".utf8))
        #expect(text(response) == "HTTP/1.1 201 Created\r\nX-B: 2\r\nX-A: 1\r\nContent-Length: 2\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\nhi")
    }

    @Test("Connection: close or keep-alive is added as asked; the application's Connection is replaced")
    func connection() {
        let response = HTTPResponse(status: .ok, headers: ["Connection": "upgrade"])
        #expect(text(response, connection: .close).contains("\r\nConnection: close\r\n"))
        #expect(text(response, connection: .keepAlive).contains("\r\nConnection: keep-alive\r\n"))
        #expect(!text(response).contains("Connection"))
    }

    @Test("HEAD drops the body and keeps the application's Content-Length, else announces the body's size")
    func head() {
        let announced = HTTPResponse(status: .ok, headers: ["Content-Length": "1234"])
        #expect(text(announced, head: true).hasSuffix("Content-Length: 1234\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n"))
        let withBody = HTTPResponse(status: .ok, body: Array("hello".utf8))
        #expect(text(withBody, head: true).hasSuffix("Content-Length: 5\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n"))
    }

    @Test("1xx and 204 carry no Content-Length and no body; 304 keeps only the application's")
    func noContent() {
        let noContent = HTTPResponse(status: .noContent, headers: ["Content-Length": "3"], body: Array("abc".utf8))
        #expect(text(noContent) == "HTTP/1.1 204 No Content\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n")
        let notModified = HTTPResponse(status: .notModified, headers: ["Content-Length": "10"], body: Array("abc".utf8))
        #expect(text(notModified) == "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n")
    }

    @Test("a Date from the application is kept and not duplicated")
    func applicationDate() {
        let response = HTTPResponse(status: .ok, headers: ["Date": "Mon, 01 Jan 2024 00:00:00 GMT"])
        let output = text(response)
        #expect(output.contains("Date: Mon, 01 Jan 2024 00:00:00 GMT\r\n"))
        #expect(!output.contains("1994"))
    }

    @Test("large bodies travel as a separate buffer, small ones share the head's")
    func buffers() {
        let small = HTTPResponseSerializer.serialize(
            HTTPResponse(status: .ok, body: [UInt8](repeating: 1, count: 100)), isResponseToHead: false,
            connection: .persistentDefault, dateLine: date)
        #expect(small.count == 1)
        let large = HTTPResponseSerializer.serialize(
            HTTPResponse(status: .ok, body: [UInt8](repeating: 1, count: 100_000)), isResponseToHead: false,
            connection: .persistentDefault, dateLine: date)
        #expect(large.count == 2)
        #expect(large[1].count == 100_000)
    }
}

@Suite("HTTPDateCache")
struct HTTPDateCacheTests {
    @Test("formats IMF-fixdate (RFC 9110 5.6.7)")
    func format() {
        #expect(String(decoding: HTTPDateCache.formatLine(epochSeconds: 784_111_777), as: UTF8.self) == "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n")
        #expect(String(decoding: HTTPDateCache.formatLine(epochSeconds: 0), as: UTF8.self) == "Date: Thu, 01 Jan 1970 00:00:00 GMT\r\n")
        #expect(String(decoding: HTTPDateCache.formatLine(epochSeconds: 1_709_251_199), as: UTF8.self) == "Date: Thu, 29 Feb 2024 23:59:59 GMT\r\n")
    }

    @Test("the cached line is the injected wall clock's current second (issue 37 item 5)")
    func current() {
        let now = Mutex(Duration.milliseconds(784_111_777_900))
        let cache = HTTPDateCache(clock: WallClock { now.withLock { $0 } })
        #expect(String(decoding: cache.currentLine(), as: UTF8.self) == "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n")
        now.withLock { $0 += .milliseconds(200) }
        #expect(String(decoding: cache.currentLine(), as: UTF8.self) == "Date: Sun, 06 Nov 1994 08:49:38 GMT\r\n")
    }
}
