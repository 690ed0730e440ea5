import FirebaseAdmin
import Foundation
import JSON
import Primitives
import Testing
import TestSupport
import TestSupportServer

/// openapi.yaml and section 11 "Auth and accounts", over real sockets: every `/v1` request
/// carries a Firebase ID token verified by the Admin SDK's rules; every refusal looks the same.
@Suite("Authentication over HTTP")
struct AuthTests {
    static let genericMessage = "missing or invalid Firebase ID token"

    @Test("a valid token is accepted and the user is provisioned with email and name from its claims")
    func validTokenProvisionsTheUser() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let uid = "auth-\(UUID().uuidString.prefix(8))"
        let token = try server.token(for: uid, email: "ann@example.com", name: "Ann Example")
        let response = try server.request("GET", "/v1/users/me", token: token)
        #expect(response.status == 200)
        #expect(response.object["id"]?.stringValue == uid)
        #expect(response.object["email"]?.stringValue == "ann@example.com")
        #expect(response.object["name"]?.stringValue == "Ann Example")
        #expect(response.object["created_at"]?.stringValue != nil && response.object["updated_at"]?.stringValue != nil)
        // The first request also provisioned the four default categories.
        let categories = try server.request("GET", "/v1/categories", token: token)
        #expect(categories.status == 200 && categories.meta["total_count"] == 4)
    }

    @Test("a token without email and name claims provisions a profile with nulls")
    func tokenWithoutProfileClaims() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let token = try server.token(for: "auth-anonymous", email: nil, name: nil)
        let response = try server.request("GET", "/v1/users/me", token: token)
        #expect(response.status == 200)
        #expect(response.object["id"] == "auth-anonymous")
        #expect(response.object["email"] == .null && response.object["name"] == .null)
    }

    @Test("no Authorization header: 401 E005 with a bare Bearer challenge, on every /v1 route")
    func missingCredentials() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let routes = [
            ("GET", "/v1/users/me"), ("PUT", "/v1/users/me"), ("DELETE", "/v1/users/me"), ("GET", "/v1/categories"),
            ("POST", "/v1/locations"), ("GET", "/v1/sync/changes"), ("POST", "/v1/sync/push"), ("GET", "/v1/info"),
        ]
        for (method, path) in routes {
            let response = try server.request(method, path, json: method == "GET" || method == "DELETE" ? nil : [:])
            #expect(response.status == 401, "\(method) \(path)")
            #expect(response.errorCode == "E005", "\(method) \(path)")
            #expect(response.headers["WWW-Authenticate"] == "Bearer", "\(method) \(path)")
            #expect(Self.message(response) == Self.genericMessage, "\(method) \(path)")
        }
        // Operational endpoints need no token.
        #expect(try server.request("GET", "/health").status == 200)
    }

    @Test("the Bearer scheme is case-insensitive")
    func schemeIsCaseInsensitive() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let token = try server.token(for: "auth-scheme")
        for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
            let response = try server.request("GET", "/v1/users/me", headers: [("Authorization", "\(scheme) \(token)")])
            #expect(response.status == 200, "scheme \(scheme)")
        }
    }

    @Test("every malformed or forged credential gets the same 401 E005 with an invalid_token challenge")
    func everyForgeryIsRefusedAlike() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let minter = server.minter
        let now = Date().timeIntervalSince1970
        let valid = try server.token(for: "auth-victim")
        let segments = valid.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let claims = minter.claims(uid: "auth-victim", issuedAt: now)
        func with(_ change: (inout JSONObject) -> Void) -> JSONObject {
            var copy = claims
            change(&copy)
            return copy
        }
        func encoded(_ object: JSONObject) -> String { Base64URL.encode(JSONWriter.encode(.object(object))) }

        // The valid token itself is accepted, so each refusal below is due to its one defect.
        #expect(try server.request("GET", "/v1/users/me", token: valid).status == 200)

        var tamperedSignature = Array(segments[2])
        let middle = tamperedSignature.count / 2
        tamperedSignature[middle] = tamperedSignature[middle] == "A" ? "B" : "A"

        let cases: [(String, String)] = [
            ("wrong scheme", "Basic \(Data("alice:secret".utf8).base64EncodedString())"),
            ("token scheme", "Token \(valid)"),
            ("Bearer without a token", "Bearer "),
            ("Bearer with two tokens", "Bearer \(valid) \(valid)"),
            ("two segments", "Bearer \(segments[0]).\(segments[1])"),
            ("four segments", "Bearer \(valid).\(segments[2])"),
            ("one segment", "Bearer \(segments[1])"),
            ("bad base64 in the header", "Bearer \(segments[0])!.\(segments[1]).\(segments[2])"),
            ("padded base64 payload", "Bearer \(segments[0]).\(segments[1])==.\(segments[2])"),
            ("bad JSON payload", "Bearer " + (try TokenMinter.mint(
                headerJSON: JSONWriter.encode(.object(minter.header())), claimsJSON: Array("{\"sub\": ".utf8),
                signature: .rs256(TestKeys.primary)))),
            ("payload not an object", "Bearer " + (try minter.sign(headerText: #"{"alg":"RS256","kid":"test-key-primary"}"#, claimsText: "[1,2]"))),
            ("alg none", "Bearer " + (try minter.sign(
                header: ["alg": "none", "typ": "JWT"], claims: claims, signature: .literal("")))),
            ("alg none with a kid and a signature", "Bearer " + (try minter.sign(
                header: ["alg": "none", "kid": .string(TestKeys.primary.kid)], claims: claims, signature: .rs256(TestKeys.primary)))),
            ("HS256 with the certificate as secret", "Bearer " + (try minter.sign(
                header: ["alg": "HS256", "kid": .string(TestKeys.primary.kid), "typ": "JWT"], claims: claims,
                signature: .hs256(secret: Array(TestKeys.primary.certificatePEM.utf8))))),
            ("RS512", "Bearer " + (try minter.sign(header: ["alg": "RS512", "kid": .string(TestKeys.primary.kid)], claims: claims))),
            ("unknown kid", "Bearer " + (try minter.sign(
                header: minter.header(kid: TestKeys.attacker.kid), claims: claims, signature: .rs256(TestKeys.attacker)))),
            ("known kid, signed by another key", "Bearer " + (try minter.sign(
                header: minter.header(), claims: claims, signature: .rs256(TestKeys.attacker)))),
            ("no kid", "Bearer " + (try minter.sign(header: ["alg": "RS256", "typ": "JWT"], claims: claims))),
            ("tampered payload", "Bearer \(segments[0]).\(encoded(with { $0["sub"] = "auth-attacker" })).\(segments[2])"),
            ("tampered signature", "Bearer \(segments[0]).\(segments[1]).\(String(tamperedSignature))"),
            ("empty signature", "Bearer \(segments[0]).\(segments[1])."),
            ("expired", "Bearer " + (try minter.sign(header: minter.header(), claims: minter.claims(uid: "auth-victim", issuedAt: now - 7200)))),
            ("iat in the future", "Bearer " + (try minter.sign(header: minter.header(), claims: minter.claims(uid: "auth-victim", issuedAt: now + 600)))),
            ("auth_time in the future", "Bearer " + (try minter.sign(header: minter.header(), claims: with { $0["auth_time"] = .number(now + 600) }))),
            ("exp not a number", "Bearer " + (try minter.sign(header: minter.header(), claims: with { $0["exp"] = .string("\(now + 3600)") }))),
            ("no exp", "Bearer " + (try minter.sign(header: minter.header(), claims: with { $0["exp"] = nil }))),
            ("wrong aud", "Bearer " + (try minter.sign(header: minter.header(), claims: with { $0["aud"] = "another-project" }))),
            ("aud as a list", "Bearer " + (try minter.sign(header: minter.header(), claims: with { $0["aud"] = [.string(TestConstants.projectID)] }))),
            ("wrong iss", "Bearer " + (try minter.sign(header: minter.header(), claims: with { $0["iss"] = "https://securetoken.google.com/another-project" }))),
            ("iss with a trailing slash", "Bearer " + (try minter.sign(header: minter.header(), claims: with { $0["iss"] = .string(minter.issuer + "/") }))),
            ("empty sub", "Bearer " + (try minter.sign(header: minter.header(), claims: with { $0["sub"] = "" }))),
            ("no sub", "Bearer " + (try minter.sign(header: minter.header(), claims: with { $0["sub"] = nil }))),
            ("129-character sub", "Bearer " + (try minter.sign(header: minter.header(), claims: with { $0["sub"] = .string(String(repeating: "a", count: 129)) }))),
            ("sub with a control character", "Bearer " + (try minter.sign(header: minter.header(), claims: with { $0["sub"] = "bad\u{0}user" }))),
        ]
        for (name, authorization) in cases {
            let response = try server.request("GET", "/v1/users/me", headers: [("Authorization", authorization)])
            #expect(response.status == 401, "\(name)")
            #expect(response.errorCode == "E005", "\(name)")
            #expect(response.headers["WWW-Authenticate"] == #"Bearer error="invalid_token""#, "\(name)")
            #expect(Self.message(response) == Self.genericMessage, "\(name): one generic message for every reason")
            #expect(response.object["error"]?.objectValue?["details"] == nil, "\(name): no reason leaks")
        }

        // Nothing was provisioned for any refused token.
        let users: Int64 = try server.pool.withConnection { connection in
            try connection.query("SELECT count(*) FROM users WHERE id <> 'auth-victim'").first?.decode(0) ?? -1
        }
        #expect(users == 0)
    }

    @Test("several Authorization headers are refused like any bad credentials")
    func severalAuthorizationHeaders() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let token = try server.token(for: "auth-twice")
        let response = try server.request(
            "GET", "/v1/users/me", headers: [("Authorization", "Bearer \(token)"), ("Authorization", "Bearer \(token)")])
        #expect(response.status == 401 && response.errorCode == "E005")
        #expect(response.headers["WWW-Authenticate"] == #"Bearer error="invalid_token""#)
    }

    @Test("the reason of a refusal goes to the log with the request id; the token itself is never logged")
    func refusalReasonIsLogged() throws {
        let log = CapturedLog()
        let server = try TestServer.start(.inProcess, logger: log.logger)
        defer { server.stop() }
        let minter = server.minter
        let expired = try minter.sign(
            header: minter.header(), claims: minter.claims(uid: "auth-logged", issuedAt: Date().timeIntervalSince1970 - 7200))
        let valid = try server.token(for: "auth-logged")
        let response = try server.request("GET", "/v1/users/me", token: expired, headers: [("X-Request-Id", "req-expired-1")])
        #expect(response.status == 401)
        #expect(!response.text.contains("expired"), "the client is not told why")
        #expect(try server.request("GET", "/v1/users/me", token: valid).status == 200)
        let refusals = log.all.filter { $0.metadata["request_id"] == "req-expired-1" && $0.metadata["reason"] != nil }
        #expect(refusals.contains { $0.metadata["reason"]?.contains("expired") == true }, "\(refusals)")
        let signatures = [expired, valid].map { String($0.split(separator: ".").last ?? "") }
        for entry in log.all {
            let text = entry.message + " " + entry.metadata.values.joined(separator: " ")
            #expect(signatures.allSatisfy { !text.contains($0) }, "a token leaked into the log: \(entry.message)")
        }
    }

    @Test("a 128-character sub is accepted; the 60 s clock skew is allowed on exp and iat")
    func boundaries() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        let minter = server.minter
        let now = Date().timeIntervalSince1970
        let longUID = String(repeating: "é", count: 128)
        var claims = minter.claims(uid: longUID, issuedAt: now)
        var response = try server.request("GET", "/v1/users/me", token: try minter.sign(header: minter.header(), claims: claims))
        #expect(response.status == 200 && response.object["id"]?.stringValue == longUID)

        // Expired 20 s ago and issued 20 s ahead are both within the 60 s allowance.
        claims = minter.claims(uid: "auth-skew", issuedAt: now - 3620)
        response = try server.request("GET", "/v1/users/me", token: try minter.sign(header: minter.header(), claims: claims))
        #expect(response.status == 200)
        claims = minter.claims(uid: "auth-skew", issuedAt: now + 20)
        response = try server.request("GET", "/v1/users/me", token: try minter.sign(header: minter.header(), claims: claims))
        #expect(response.status == 200)
    }

    @Test("a token signed with a key Google published later is accepted after one refetch for the unknown kid")
    func rotatedKeyIsPickedUp() throws {
        let server = try TestServer.start(.inProcess)
        defer { server.stop() }
        #expect(try server.request("GET", "/v1/users/me", as: "auth-rotation").status == 200)
        server.fake.publish([TestKeys.primary, TestKeys.secondary])
        let minter = TokenMinter(projectId: TestConstants.projectID, key: TestKeys.secondary)
        let token = try minter.token(uid: "auth-rotation", now: Date().timeIntervalSince1970)
        #expect(try server.request("GET", "/v1/users/me", token: token).status == 200)
    }

    @Test("Google's keys unreachable with nothing cached: 503 S003, not 401")
    func keysUnavailable() throws {
        let server = try TestServer.start(configure: { configuration in
            // Nothing listens on port 9 of the loopback: every fetch fails at once.
            configuration.idTokenCertsURL = "http://127.0.0.1:9/robot/v1/metadata/x509/securetoken@system.gserviceaccount.com"
        })
        defer { server.stop() }
        let response = try server.request("GET", "/v1/users/me", as: "auth-no-keys")
        #expect(response.status == 503)
        #expect(response.errorCode == "S003")
        #expect(response.headers["Retry-After"] != nil)
        #expect(response.headers["WWW-Authenticate"] == nil)
    }

    @Test("the key endpoint failing with nothing cached: 503 S003; a server holding keys keeps working")
    func keyEndpointFailing() throws {
        let server = try TestServer.start()
        defer { server.stop() }
        // The first application has its keys (a request verified a token with them).
        #expect(try server.request("GET", "/v1/users/me", as: "auth-endpoint-failing").status == 200)
        // A second application on the same database starts with an empty key cache while the
        // endpoint fails.
        server.fake.certificatesFailing = true
        let second = try server.startApplication()
        defer { second.shutdown() }
        let token = try server.token(for: "auth-endpoint-failing", issuedAt: Date().timeIntervalSince1970 - 1)
        let response = try server.request(port: second.port, "GET", "/v1/users/me", token: token)
        #expect(response.status == 503 && response.errorCode == "S003")
        // The first application keeps working on the keys it has.
        #expect(try server.request("GET", "/v1/users/me", token: token).status == 200)
    }

    static func message(_ response: TestResponse) -> String? {
        response.object["error"]?.objectValue?["message"]?.stringValue
    }
}

/// A test precondition that did not hold.
struct AuthTestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
