import FirebaseAdmin
import Foundation
import JSON
import Testing
import TestSupport

@Suite("ServiceAccountTokenProvider")
struct ServiceAccountTokenProviderTests {
    private func provider(_ bed: FirebaseTestBed, pkcs1: Bool = false) throws -> ServiceAccountTokenProvider {
        try ServiceAccountTokenProvider(
            account: TestServiceAccount.account(pkcs1: pkcs1), transport: bed.transport, clock: bed.clock.wallClock,
            logger: bed.logs.logger())
    }

    @Test("the fake token endpoint verifies the assertion (real RS256) and its claims", arguments: [false, true])
    func assertionAccepted(pkcs1: Bool) throws {
        let bed = FirebaseTestBed()
        let token = try provider(bed, pkcs1: pkcs1).accessToken()
        #expect(token == "fake-access-token-1")
        let claims = try #require(bed.fake.lastAssertionClaims)
        #expect(claims["iss"] == .string(TestServiceAccount.clientEmail))
        #expect(claims["aud"] == .string(TestServiceAccount.tokenURI))
        #expect(claims["scope"] == "https://www.googleapis.com/auth/cloud-platform")
        let issuedAt = try #require(claims["iat"]?.numberValue)
        #expect(issuedAt == bed.now.rounded(.down) - 10)
        #expect(claims["exp"]?.numberValue == issuedAt + 3600)
        let request = try #require(bed.fake.requests.last)
        #expect(request.header("Content-Type") == "application/x-www-form-urlencoded")
        #expect(String(decoding: request.body, as: UTF8.self).hasPrefix("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion="))
    }

    @Test("the access token is reused until about four minutes before expiry, then renewed")
    func caching() throws {
        let bed = FirebaseTestBed()
        bed.fake.tokenLifetime = 3600
        let provider = try provider(bed)
        #expect(try provider.accessToken() == "fake-access-token-1")
        bed.clock.advance(by: 3000)
        #expect(try provider.accessToken() == "fake-access-token-1")
        bed.clock.advance(by: 3600 - 240 - 3000 - 1)
        #expect(try provider.accessToken() == "fake-access-token-1")
        bed.clock.advance(by: 2)
        #expect(try provider.accessToken() == "fake-access-token-2")
        #expect(bed.fake.issuedTokenCount == 2)
    }

    @Test("a refused assertion surfaces as a retryable error")
    func refusedAssertion() throws {
        let bed = FirebaseTestBed()
        let forged = ServiceAccount(
            projectId: "locify-test", privateKey: TestKeys.attacker.privateKeyPEM, privateKeyId: TestKeys.service.kid,
            clientEmail: TestServiceAccount.clientEmail, tokenURI: TestServiceAccount.tokenURI)
        let provider = try ServiceAccountTokenProvider(account: forged, transport: bed.transport, clock: bed.clock.wallClock, logger: bed.logs.logger())
        do {
            _ = try provider.accessToken()
            Issue.record("expected a failure")
        } catch let error as GoogleAPIError {
            #expect(error.retryable)
            #expect(error.status == 400)
            #expect(error.message.contains("Invalid JWT Signature"))
        }
        #expect(bed.fake.issuedTokenCount == 0)
    }

    @Test("token endpoint outages and network errors are retryable")
    func outages() throws {
        let bed = FirebaseTestBed()
        let provider = try provider(bed)
        bed.fake.failNext(.token, status: 503)
        #expect { try provider.accessToken() } throws: { ($0 as? GoogleAPIError)?.retryable == true }
        bed.fake.dropNextConnections()
        #expect { try provider.accessToken() } throws: { ($0 as? GoogleAPIError).map { $0.retryable && $0.status == nil } == true }
        #expect(try provider.accessToken() == "fake-access-token-1")
    }

    @Test("an unreadable private key fails at construction")
    func badKey() {
        var account = TestServiceAccount.account()
        account.privateKey = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
        #expect(throws: CryptoKeyError.self) {
            try ServiceAccountTokenProvider(account: account, transport: InProcessTransport(fake: FakeGoogle()), logger: LogCapture().logger())
        }
    }

    @Test("a huge expires_in from the token endpoint is capped at a day, without a trap (debug logging on)")
    func hugeLifetimeCapped() throws {
        let bed = FirebaseTestBed()
        bed.fake.tokenLifetime = Int.max
        let tokens = try provider(bed)
        #expect(try tokens.accessToken() == "fake-access-token-1")
        bed.clock.advance(by: 86_400 - 240 + 1)
        #expect(try tokens.accessToken() == "fake-access-token-2")
    }
}

@Suite("ServiceAccount")
struct ServiceAccountTests {
    @Test("loads a key file, turning the PEM's \\n escapes into newlines", arguments: [false, true])
    func load(pkcs1: Bool) throws {
        let path = try TestServiceAccount.writeFile(pkcs1: pkcs1)
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(String(decoding: try #require(FileManager.default.contents(atPath: path)), as: UTF8.self).contains(#"\n"#))
        let account = try ServiceAccount.load(path: path)
        #expect(account == TestServiceAccount.account(pkcs1: pkcs1))
        #expect(account.privateKey.contains("\n"))
        #expect(account.tokenURI == "https://oauth2.googleapis.com/token")
    }

    @Test("refuses incomplete or foreign files")
    func refuses() {
        #expect(throws: ServiceAccountError.self) { try ServiceAccount.load(path: "/nonexistent/key.json") }
        #expect(throws: ServiceAccountError.self) { try ServiceAccount(json: Array("not json".utf8)) }
        #expect(throws: ServiceAccountError.self) { try ServiceAccount(json: Array("[]".utf8)) }
        #expect(throws: ServiceAccountError.self) { try ServiceAccount(json: Array(#"{"type":"authorized_user"}"#.utf8)) }
        var object = try? JSONParser.parse(TestServiceAccount.json()).objectValue
        object?["private_key"] = nil
        #expect(throws: ServiceAccountError.self) { try ServiceAccount(json: JSONWriter.encode(.object(object ?? [:]))) }
    }

    @Test("token_uri defaults to Google's endpoint")
    func defaultTokenURI() throws {
        var object = try #require(try JSONParser.parse(TestServiceAccount.json()).objectValue)
        object["token_uri"] = nil
        #expect(try ServiceAccount(json: JSONWriter.encode(.object(object))).tokenURI == ServiceAccount.defaultTokenURI)
    }

    @Test("token_uri must be https, or plain http to a loopback host: the signed assertion travels there")
    func tokenURIMustBeHTTPS() throws {
        var object = try #require(try JSONParser.parse(TestServiceAccount.json()).objectValue)
        for refused in ["http://oauth2.googleapis.com/token", "http://127.0.0.1.evil.example/token", "ftp://127.0.0.1/token", "token"] {
            object["token_uri"] = .string(refused)
            do {
                _ = try ServiceAccount(json: JSONWriter.encode(.object(object)))
                Issue.record("accepted token_uri \(refused)")
            } catch {
                #expect(error.description.contains("token_uri must be an https URL"))
            }
        }
        for accepted in ["https://oauth2.googleapis.com/token", "http://127.0.0.1:9099/token", "http://localhost/token"] {
            object["token_uri"] = .string(accepted)
            #expect(try ServiceAccount(json: JSONWriter.encode(.object(object))).tokenURI == accepted)
        }
    }
}
