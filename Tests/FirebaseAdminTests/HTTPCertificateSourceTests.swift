@testable import FirebaseAdmin
import HTTPClient
import JSON
import LocifyRules
import Testing
import TestSupport

@Suite("HTTPCertificateSource")
struct HTTPCertificateSourceTests {
    @Test("reads the kid-to-certificate map and the max-age")
    func reads() throws {
        let fake = FakeGoogle()
        fake.publish([TestKeys.primary, TestKeys.secondary])
        fake.certificatesMaxAge = 19_880
        let source = HTTPCertificateSource(url: FakeGoogle.certificatesURL, transport: InProcessTransport(fake: fake))
        let set = try source.fetchCertificates()
        #expect(set.certificates == [TestKeys.primary.kid: TestKeys.primary.certificatePEM, TestKeys.secondary.kid: TestKeys.secondary.certificatePEM])
        #expect(set.maxAge == 19_880)
        fake.certificatesMaxAge = nil
        #expect(try source.fetchCertificates().maxAge == nil)
    }

    @Test("an error status or a broken body is a failure")
    func failures() {
        let fake = FakeGoogle()
        let source = HTTPCertificateSource(url: FakeGoogle.certificatesURL, transport: InProcessTransport(fake: fake))
        fake.certificatesFailing = true
        #expect(throws: (any Error).self) { try source.fetchCertificates() }
        fake.certificatesFailing = false
        fake.dropNextConnections()
        #expect(throws: (any Error).self) { try source.fetchCertificates() }
    }

    @Test("Cache-Control max-age parsing")
    func cacheControl() {
        #expect(CacheControl.maxAge("public, max-age=22344, must-revalidate, no-transform") == 22_344)
        #expect(CacheControl.maxAge("MAX-AGE = 60") == 60)
        #expect(CacheControl.maxAge("max-age=\"30\"") == 30)
        #expect(CacheControl.maxAge("public") == nil)
        #expect(CacheControl.maxAge("max-age=-5") == nil)
        #expect(CacheControl.maxAge("max-age=abc") == nil)
        #expect(CacheControl.maxAge("no-cache, max-age=60") == nil)
        #expect(CacheControl.maxAge(nil) == nil)
        #expect(CacheControl.maxAge("") == nil)
    }

    @Test("hostile Cache-Control values (a lone =, empty directives, quotes, huge numbers) parse without a trap")
    func cacheControlHostile() {
        for header in ["=", "==", ",=,", " = ", "=5", "=max-age=5", ", ,", ",,,", "\"", "max-age=\"", "max-age=\"\"", "\t=\t", "max-age="] {
            #expect(CacheControl.maxAge(header) == nil, "\(header.debugDescription)")
        }
        #expect(CacheControl.maxAge("=, max-age=60") == 60)
        #expect(CacheControl.maxAge("max-age==5") == nil)
        #expect(CacheControl.maxAge("max-age=99999999999999999999999") == 999_999_999_999)
    }

    /// Answers every request with the given headers and a valid certificate body.
    struct FixedHeadersTransport: HTTPTransport {
        let headers: [(String, String)]

        func send(_ request: TransportRequest) throws -> TransportResponse {
            let body = JSONWriter.encode(.object([TestKeys.primary.kid: .string(TestKeys.primary.certificatePEM)]))
            return TransportResponse(status: 200, headers: headers, body: body)
        }
    }

    @Test("a key endpoint answering `Cache-Control: =` is read, with no max-age")
    func keyEndpointWithLoneEquals() throws {
        let source = HTTPCertificateSource(
            url: FakeGoogle.certificatesURL, transport: FixedHeadersTransport(headers: [("Cache-Control", "=")]))
        let set = try source.fetchCertificates()
        #expect(set.certificates.keys.sorted() == [TestKeys.primary.kid])
        #expect(set.maxAge == nil)
    }
}

@Suite("Google responses")
struct GoogleResponseTests {
    @Test("Retry-After as seconds or as an HTTP date")
    func retryAfter() {
        #expect(GoogleResponse.retryAfter("120", now: 0) == 120)
        #expect(GoogleResponse.retryAfter(" 5 ", now: 0) == 5)
        #expect(GoogleResponse.retryAfter("Sun, 06 Nov 1994 08:49:37 GMT", now: 784_111_770) == 7)
        #expect(GoogleResponse.retryAfter("Sun, 06 Nov 1994 08:49:37 GMT", now: 784_111_800) == 0)
        #expect(GoogleResponse.retryAfter("soon", now: 0) == nil)
        #expect(GoogleResponse.retryAfter("-3", now: 0) == nil)
        #expect(GoogleResponse.retryAfter(nil, now: 0) == nil)
    }

    @Test("error messages from Google's and OAuth's error bodies")
    func messages() {
        #expect(GoogleResponse.message(in: Array(#"{"error":{"code":400,"message":"USER_NOT_FOUND"}}"#.utf8)) == "USER_NOT_FOUND")
        #expect(GoogleResponse.message(in: Array(#"{"error":"invalid_grant","error_description":"Invalid JWT"}"#.utf8)) == "Invalid JWT")
        #expect(GoogleResponse.message(in: Array(#"{"error":"invalid_grant"}"#.utf8)) == "invalid_grant")
        #expect(GoogleResponse.message(in: Array("<html>".utf8)) == nil)
    }

    @Test("USER_NOT_FOUND recognition")
    func userNotFound() {
        #expect(IdentityToolkitClient.isUserNotFound("USER_NOT_FOUND"))
        #expect(IdentityToolkitClient.isUserNotFound("USER_NOT_FOUND : There is no user record"))
        #expect(IdentityToolkitClient.isUserNotFound("USER_NOT_FOUND: detail"))
        #expect(!IdentityToolkitClient.isUserNotFound("USER_NOT_FOUNDX"))
        #expect(!IdentityToolkitClient.isUserNotFound("INVALID_ID_TOKEN"))
    }

    @Test("percent-encoding of one component and decoding")
    func percentEncoding() {
        #expect(PercentEncoding.encodeComponent("a/b c?d#e%f+g&h=i~j.k_l-m") == "a%2Fb%20c%3Fd%23e%25f%2Bg%26h%3Di~j.k_l-m")
        #expect(PercentEncoding.encodeComponent("é") == "%C3%A9")
        #expect(PercentEncoding.decode("a%2Fb%20c+d") == "a/b c+d")
        #expect(PercentEncoding.decode("%c3%a9") == "é")
        #expect(PercentEncoding.decode("%") == nil)
        #expect(PercentEncoding.decode("%4") == nil)
        #expect(PercentEncoding.decode("%C3") == nil)
    }
}
