import Testing

@testable import HTTPClient

@Suite("TransportURL")
struct TransportURLTests {
    @Test("scheme, host, port, target and Host header of accepted URLs")
    func accepted() throws {
        let cases: [(String, Bool, String, UInt16, String, String)] = [
            ("https://oauth2.googleapis.com/token", true, "oauth2.googleapis.com", 443, "/token", "oauth2.googleapis.com"),
            ("HTTPS://Storage.googleapis.com:443/b/x/o/a%2Fb?alt=json#frag", true, "Storage.googleapis.com", 443, "/b/x/o/a%2Fb?alt=json",
                "Storage.googleapis.com"),
            ("http://127.0.0.1:8080", false, "127.0.0.1", 8080, "/", "127.0.0.1:8080"),
            ("http://localhost?q=1", false, "localhost", 80, "/?q=1", "localhost"),
            ("https://[::1]:8443/x", true, "::1", 8443, "/x", "[::1]:8443"),
            ("http://[2001:db8::1]/", false, "2001:db8::1", 80, "/", "[2001:db8::1]"),
        ]
        for (text, isHTTPS, host, port, target, hostHeader) in cases {
            let url = try TransportURL(text)
            #expect(url.isHTTPS == isHTTPS, "\(text)")
            #expect(url.host == host, "\(text)")
            #expect(url.port == port, "\(text)")
            #expect(url.target == target, "\(text)")
            #expect(url.hostHeader == hostHeader, "\(text)")
        }
        #expect(try TransportURL("https://[::1]/").hostIsIPAddress)
        #expect(try TransportURL("https://10.0.0.1/").hostIsIPAddress)
        #expect(try !TransportURL("https://www.googleapis.com/").hostIsIPAddress)
    }

    @Test("other schemes, user information, bad hosts and ports are refused")
    func refused() {
        for text in [
            "", "www.googleapis.com/x", "ftp://h/", "https:/h/", "https://", "https://:443/", "https://u:p@h/", "https://h:0/", "https://h:99999/",
            "https://h:-1/", "https://h:1:2/", "https://h/a b", "https://h/\u{e9}", "https://[::1/", "https://[nothost]/", "https://[::1]x/",
            "https://h\r\nX: y/",
        ] {
            #expect(throws: TransportError.self, "\(text)") { try TransportURL(text) }
        }
    }
}
