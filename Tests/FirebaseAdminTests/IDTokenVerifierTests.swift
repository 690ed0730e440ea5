import FirebaseAdmin
import JSON
import Primitives
import Testing
import TestSupport

/// One forged or malformed token and the log reason its rejection must carry.
struct Forgery: Sendable, CustomTestStringConvertible {
    let name: String
    let reason: String
    /// Whether the rejection happens before any RSA work.
    let beforeSignature: Bool
    let make: @Sendable (TokenMinter, Double) throws -> String

    var testDescription: String { name }
}

private func segments(_ token: String) -> [String] {
    token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
}

private func replacingClaims(_ token: String, _ change: (inout JSONObject) -> Void) throws -> String {
    let parts = segments(token)
    let payload = try #require(Base64URL.decode(parts[1]))
    var claims = try #require(try JSONParser.parse(payload).objectValue)
    change(&claims)
    return parts[0] + "." + Base64URL.encode(JSONWriter.encode(.object(claims))) + "." + parts[2]
}

private func withClaims(_ change: @escaping @Sendable (inout JSONObject, Double) -> Void) -> @Sendable (TokenMinter, Double) throws -> String {
    { minter, now in
        var claims = minter.claims(issuedAt: now - 60)
        change(&claims, now)
        return try minter.sign(header: minter.header(), claims: claims)
    }
}

private func withHeader(
    _ header: JSONObject, signature: TokenSignature? = nil
) -> @Sendable (TokenMinter, Double) throws -> String {
    { minter, now in try minter.sign(header: header, claims: minter.claims(issuedAt: now - 60), signature: signature) }
}

@Suite("IDTokenVerifier")
struct IDTokenVerifierTests {
    static let forgeries: [Forgery] = [
        Forgery(name: "two segments", reason: "three segments", beforeSignature: true) { minter, now in
            segments(try minter.token(now: now)).prefix(2).joined(separator: ".")
        },
        Forgery(name: "four segments", reason: "three segments", beforeSignature: true) { minter, now in
            try minter.token(now: now) + ".AAAA"
        },
        Forgery(name: "padding on the header", reason: "header is not strict base64url", beforeSignature: true) { minter, now in
            var parts = segments(try minter.token(now: now))
            parts[0] += "="
            return parts.joined(separator: ".")
        },
        Forgery(name: "standard base64 character in the payload", reason: "payload is not strict base64url", beforeSignature: true) {
            minter, now in
            var parts = segments(try minter.token(now: now))
            parts[1] = "+" + parts[1].dropFirst()
            return parts.joined(separator: ".")
        },
        Forgery(name: "padding on the signature", reason: "signature is not strict base64url", beforeSignature: true) { minter, now in
            try minter.token(now: now) + "="
        },
        Forgery(name: "whitespace inside a segment", reason: "payload is not strict base64url", beforeSignature: true) { minter, now in
            var parts = segments(try minter.token(now: now))
            parts[1].insert(" ", at: parts[1].index(parts[1].startIndex, offsetBy: 4))
            return parts.joined(separator: ".")
        },
        Forgery(name: "header is not JSON", reason: "header is not valid JSON", beforeSignature: true) { minter, now in
            try minter.sign(headerText: #"{"alg":"RS256","kid":"test-key-primary",}"#, claimsText: #"{"sub":"x"}"#)
        },
        Forgery(name: "payload is a JSON array", reason: "payload is not a JSON object", beforeSignature: true) { minter, now in
            try minter.sign(headerText: #"{"alg":"RS256","kid":"test-key-primary"}"#, claimsText: "[1,2,3]")
        },
        Forgery(name: "duplicate keys in the payload", reason: "payload is not valid JSON (duplicate key)", beforeSignature: true) {
            minter, now in
            let claims = String(decoding: JSONWriter.encode(.object(minter.claims(issuedAt: now - 60))), as: UTF8.self)
            return try minter.sign(
                headerText: #"{"alg":"RS256","kid":"test-key-primary"}"#, claimsText: String(claims.dropLast()) + #","sub":"admin"}"#)
        },
        Forgery(name: "duplicate alg in the header", reason: "header is not valid JSON (duplicate key)", beforeSignature: true) {
            minter, now in
            let claims = String(decoding: JSONWriter.encode(.object(minter.claims(issuedAt: now - 60))), as: UTF8.self)
            return try minter.sign(headerText: #"{"alg":"none","kid":"test-key-primary","alg":"RS256"}"#, claimsText: claims)
        },
        Forgery(
            name: "alg none outside emulator mode", reason: "alg must be RS256", beforeSignature: true,
            make: withHeader(["alg": "none", "typ": "JWT"], signature: .literal(""))),
        Forgery(
            name: "HS256 signed with the certificate as secret", reason: "alg must be RS256", beforeSignature: true,
            make: withHeader(
                ["alg": "HS256", "kid": "test-key-primary", "typ": "JWT"],
                signature: .hs256(secret: Array(TestKeys.primary.certificatePEM.utf8)))),
        Forgery(
            name: "RS512", reason: "alg must be RS256", beforeSignature: true,
            make: withHeader(["alg": "RS512", "kid": "test-key-primary", "typ": "JWT"])),
        Forgery(
            name: "ES256", reason: "alg must be RS256", beforeSignature: true,
            make: withHeader(["alg": "ES256", "kid": "test-key-primary", "typ": "JWT"])),
        Forgery(
            name: "lower-case rs256", reason: "alg must be RS256", beforeSignature: true,
            make: withHeader(["alg": "rs256", "kid": "test-key-primary", "typ": "JWT"])),
        Forgery(
            name: "missing alg", reason: "header has no string alg", beforeSignature: true,
            make: withHeader(["kid": "test-key-primary", "typ": "JWT"])),
        Forgery(
            name: "missing kid", reason: "header has no kid", beforeSignature: true, make: withHeader(["alg": "RS256", "typ": "JWT"])),
        Forgery(
            name: "empty kid", reason: "header has no kid", beforeSignature: true,
            make: withHeader(["alg": "RS256", "kid": "", "typ": "JWT"])),
        Forgery(
            name: "unknown kid", reason: "no current Google key has kid", beforeSignature: true,
            make: withHeader(["alg": "RS256", "kid": "forged-kid", "typ": "JWT"])),
        Forgery(
            name: "typ other than JWT", reason: "typ is not JWT", beforeSignature: true,
            make: withHeader(["alg": "RS256", "kid": "test-key-primary", "typ": "JOSE"])),
        Forgery(name: "tampered payload", reason: "signature does not verify", beforeSignature: false) { minter, now in
            try replacingClaims(try minter.token(uid: "victim", now: now)) { $0["sub"] = "attacker" }
        },
        Forgery(name: "tampered signature", reason: "signature does not verify", beforeSignature: false) { minter, now in
            var parts = segments(try minter.token(now: now))
            parts[2] = (parts[2].first == "A" ? "B" : "A") + parts[2].dropFirst()
            return parts.joined(separator: ".")
        },
        Forgery(
            name: "signed by another key under a known kid", reason: "signature does not verify", beforeSignature: false,
            make: withHeader(["alg": "RS256", "kid": "test-key-primary", "typ": "JWT"], signature: .rs256(TestKeys.attacker))),
        Forgery(
            name: "expired beyond the skew", reason: "token expired", beforeSignature: true,
            make: withClaims { claims, now in
                claims["iat"] = .number(now - 4000)
                claims["auth_time"] = .number(now - 4000)
                claims["exp"] = .number(now - 61)
            }),
        Forgery(
            name: "iat in the future beyond the skew", reason: "iat is in the future", beforeSignature: true,
            make: withClaims { claims, now in
                claims["iat"] = .number(now + 61)
                claims["exp"] = .number(now + 3600)
            }),
        Forgery(
            name: "exp equal to iat", reason: "exp is not after iat", beforeSignature: true,
            make: withClaims { claims, now in
                claims["iat"] = .number(now - 10)
                claims["exp"] = .number(now - 10)
            }),
        Forgery(
            name: "exp before iat", reason: "exp is not after iat", beforeSignature: true,
            make: withClaims { claims, now in
                claims["iat"] = .number(now - 10)
                claims["exp"] = .number(now - 20)
            }),
        Forgery(
            name: "exp as a string", reason: "exp is not a number", beforeSignature: true,
            make: withClaims { claims, now in claims["exp"] = .string("\(Int(now) + 3600)") }),
        Forgery(
            name: "iat missing", reason: "iat is not a number", beforeSignature: true,
            make: withClaims { claims, _ in claims["iat"] = nil }),
        Forgery(
            name: "absurd exp", reason: "exp is out of range", beforeSignature: true,
            make: withClaims { claims, _ in claims["exp"] = .number(1e300) }),
        Forgery(
            name: "wrong aud", reason: "is not the project id", beforeSignature: true,
            make: withClaims { claims, _ in claims["aud"] = "other-project" }),
        Forgery(
            name: "aud as a list", reason: "aud is not a string", beforeSignature: true,
            make: withClaims { claims, _ in claims["aud"] = ["locify-test"] }),
        Forgery(
            name: "iss with a trailing slash", reason: "iss", beforeSignature: true,
            make: withClaims { claims, _ in claims["iss"] = "https://securetoken.google.com/locify-test/" }),
        Forgery(
            name: "iss in another case", reason: "iss", beforeSignature: true,
            make: withClaims { claims, _ in claims["iss"] = "https://securetoken.google.com/Locify-Test" }),
        Forgery(
            name: "empty sub", reason: "sub is empty", beforeSignature: true, make: withClaims { claims, _ in claims["sub"] = "" }),
        Forgery(
            name: "sub of 129 code points", reason: "sub is longer than 128 code points", beforeSignature: true,
            make: withClaims { claims, _ in claims["sub"] = .string(String(repeating: "é", count: 129)) }),
        Forgery(
            name: "sub with a C0 control character", reason: "sub contains a control character", beforeSignature: true,
            make: withClaims { claims, _ in claims["sub"] = "user\u{7}1" }),
        Forgery(
            name: "sub with a C1 control character", reason: "sub contains a control character", beforeSignature: true,
            make: withClaims { claims, _ in claims["sub"] = "user\u{85}1" }),
        Forgery(
            name: "sub as a number", reason: "sub is not a string", beforeSignature: true,
            make: withClaims { claims, _ in claims["sub"] = 42 }),
        Forgery(
            name: "auth_time in the future", reason: "auth_time is in the future", beforeSignature: true,
            make: withClaims { claims, now in claims["auth_time"] = .number(now + 61) }),
        Forgery(
            name: "auth_time as a string", reason: "auth_time is not a number", beforeSignature: true,
            make: withClaims { claims, _ in claims["auth_time"] = "yesterday" }),
        Forgery(name: "overlong token", reason: "longer than", beforeSignature: true) { _, _ in
            String(repeating: "a", count: 20_000)
        },
        Forgery(name: "empty token", reason: "three segments", beforeSignature: true) { _, _ in "" },
    ]

    @Test("rejects forged and malformed tokens with a clear reason", arguments: forgeries)
    func rejects(_ forgery: Forgery) throws {
        let bed = FirebaseTestBed()
        let token = try forgery.make(bed.minter, bed.now)
        let outcome = bed.outcome(token)
        let reason = try #require(outcome.invalidReason, "expected .invalid, got \(outcome)")
        #expect(reason.contains(forgery.reason), "reason was: \(reason)")
        if forgery.beforeSignature {
            #expect(bed.verifier.signatureVerificationCount == 0)
        }
        let logged = bed.logs.all.first { $0.message == "ID token rejected" }
        #expect(logged?.metadata["reason"] == reason)
        #expect(!(logged?.metadata.values.contains { $0.contains(token) && !token.isEmpty } ?? false), "the token itself is never logged")
    }

    @Test("accepts a valid token and maps its claims")
    func acceptsValidToken() throws {
        let bed = FirebaseTestBed()
        let issuedAt = bed.now - 120
        let token = try bed.minter.sign(
            header: bed.minter.header(), claims: bed.minter.claims(uid: "uid-42", issuedAt: issuedAt, email: "a@b.c", name: "Ann"))
        let verified = try bed.verifier.verify(token)
        #expect(
            verified
                == VerifiedIDToken(
                    uid: "uid-42", email: "a@b.c", name: "Ann", issuedAt: Int64(issuedAt), expiresAt: Int64(issuedAt + 3600),
                    authTime: Int64(issuedAt - 30)))
        #expect(bed.verifier.signatureVerificationCount == 1)
    }

    @Test("optional claims absent or of another type map to nil")
    func optionalClaims() throws {
        let bed = FirebaseTestBed()
        var claims = bed.minter.claims(issuedAt: bed.now, email: nil, name: nil)
        claims["auth_time"] = nil
        claims["name"] = 7
        let verified = try bed.verifier.verify(try bed.minter.sign(header: bed.minter.header(), claims: claims))
        #expect(verified.email == nil)
        #expect(verified.name == nil)
        #expect(verified.authTime == nil)
    }

    @Test("times within the skew are accepted")
    func withinSkew() throws {
        let bed = FirebaseTestBed()
        let now = bed.now
        let expiredWithinSkew = withClaims { claims, now in
            claims["iat"] = .number(now - 3600)
            claims["exp"] = .number(now - 59)
        }
        let expired = try bed.verifier.verify(try expiredWithinSkew(bed.minter, now))
        #expect(expired.uid == "user-1")
        #expect(expired.issuedAt == Int64(now - 3600))
        #expect(expired.expiresAt == Int64(now - 59))
        let issuedAhead = withClaims { claims, now in
            claims["iat"] = .number(now + 59)
            claims["auth_time"] = .number(now + 59)
            claims["exp"] = .number(now + 3600)
        }
        let ahead = try bed.verifier.verify(try issuedAhead(bed.minter, now))
        #expect(ahead.uid == "user-1")
        #expect(ahead.issuedAt == Int64(now + 59))
        #expect(ahead.authTime == Int64(now + 59))
        #expect(ahead.expiresAt == Int64(now + 3600))
    }

    @Test("a zero skew makes the boundaries exact")
    func zeroSkew() throws {
        let bed = FirebaseTestBed(clockSkew: 0)
        let expiredOneSecondAgo = withClaims { claims, now in
            claims["iat"] = .number(now - 3600)
            claims["exp"] = .number(now - 1)
        }
        #expect(bed.outcome(try expiredOneSecondAgo(bed.minter, bed.now)).invalidReason == "token expired")
    }

    @Test("sub of 128 code points is accepted (counted in code points, not bytes)")
    func longestSub() throws {
        let bed = FirebaseTestBed()
        let uid = String(repeating: "é", count: 127) + "😀"
        #expect(uid.utf8.count > 128)
        let verified = try bed.verifier.verify(try bed.minter.token(uid: uid, now: bed.now))
        #expect(verified.uid == uid)
    }

    @Test("typ is compared case-insensitively and may be absent")
    func typVariants() throws {
        let bed = FirebaseTestBed()
        let headers: [(uid: String, header: JSONObject)] = [
            ("typ-lower-case", ["alg": "RS256", "kid": "test-key-primary", "typ": "jwt"]),
            ("typ-mixed-case", ["alg": "RS256", "kid": "test-key-primary", "typ": "Jwt"]),
            ("typ-absent", ["alg": "RS256", "kid": "test-key-primary"]),
        ]
        for (uid, header) in headers {
            let token = try bed.minter.sign(header: header, claims: bed.minter.claims(uid: uid, issuedAt: bed.now))
            let verified = try bed.verifier.verify(token)
            #expect(verified.uid == uid)
            #expect(verified.issuedAt == Int64(bed.now))
        }
    }

    @Test("a second verify of the same token runs no RSA verification")
    func tokenCacheHit() throws {
        let bed = FirebaseTestBed()
        let token = try bed.minter.token(now: bed.now)
        let first = try bed.verifier.verify(token)
        let second = try bed.verifier.verify(token)
        #expect(first == second)
        #expect(bed.verifier.signatureVerificationCount == 1)
        _ = try bed.verifier.verify(try bed.minter.token(uid: "other", now: bed.now))
        #expect(bed.verifier.signatureVerificationCount == 2)
    }

    @Test("an expired cached token is rejected")
    func cachedTokenExpires() throws {
        let bed = FirebaseTestBed()
        let token = try bed.minter.token(now: bed.now, lifetime: 600)
        _ = try bed.verifier.verify(token)
        bed.clock.advance(by: 600 + 60)
        _ = try bed.verifier.verify(token)
        bed.clock.advance(by: 1)
        #expect(bed.outcome(token).invalidReason?.contains("expired") == true)
        #expect(bed.verifier.signatureVerificationCount == 1)
    }

    @Test("with the cache disabled every verify checks the signature")
    func cacheDisabled() throws {
        let bed = FirebaseTestBed(cacheCapacity: 0)
        let token = try bed.minter.token(now: bed.now)
        _ = try bed.verifier.verify(token)
        _ = try bed.verifier.verify(token)
        #expect(bed.verifier.signatureVerificationCount == 2)
    }

    @Test("keys that cannot be fetched make verification unavailable, not invalid")
    func keysUnavailable() throws {
        let bed = FirebaseTestBed()
        bed.fake.certificatesFailing = true
        let outcome = bed.outcome(try bed.minter.token(now: bed.now))
        guard case .failure(.keysUnavailable) = outcome else {
            Issue.record("expected keysUnavailable, got \(outcome)")
            return
        }
    }

    @Test("a key rotation is picked up through the unknown-kid refetch")
    func rotation() throws {
        let bed = FirebaseTestBed()
        _ = try bed.verifier.verify(try bed.minter.token(now: bed.now))
        bed.fake.publish([TestKeys.primary, TestKeys.secondary])
        let rotated = TokenMinter(projectId: "locify-test", key: TestKeys.secondary)
        _ = try bed.verifier.verify(try rotated.token(uid: "rotated", now: bed.now))
        #expect(bed.fake.requestCount(.certificates) == 2)
    }

    @Test("concurrent verifications of many tokens agree")
    func concurrentVerification() async throws {
        let bed = FirebaseTestBed(cacheCapacity: 16)
        let tokens = try (0..<64).map { try bed.minter.token(uid: "user-\($0 % 32)", now: bed.now - Double($0)) }
        // Keys first: with none cached, only the lookup that starts the one fetch waits for it and
        // the others are refused at once (keysUnavailable, by design), which is not this test's topic.
        _ = try bed.verifier.verify(try bed.minter.token(uid: "warm-up", now: bed.now))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, token) in tokens.enumerated() {
                group.addTask {
                    let verified = try bed.verifier.verify(token)
                    #expect(verified.uid == "user-\(index % 32)")
                }
            }
            try await group.waitForAll()
        }
    }
}

@Suite("IDTokenVerifier in emulator mode")
struct IDTokenVerifierEmulatorTests {
    @Test("accepts the emulator's unsigned token")
    func acceptsEmulatorToken() throws {
        let bed = FirebaseTestBed(emulatorMode: true)
        let token = try bed.minter.emulatorToken(claims: bed.minter.claims(uid: "emu-user", issuedAt: bed.now))
        #expect(token.hasSuffix("."))
        #expect(try bed.verifier.verify(token).uid == "emu-user")
        #expect(bed.fake.requestCount(.certificates) == 0)
    }

    @Test("works without a key cache")
    func noKeyCache() throws {
        let minter = TokenMinter()
        let clock = ManualClock<Double>()
        let verifier = IDTokenVerifier(
            projectId: "locify-test", keys: nil, emulatorMode: true, clock: clock.wallClock, logger: LogCapture().logger())
        #expect(try verifier.verify(try minter.emulatorToken(claims: minter.claims(issuedAt: clock.now))).uid == "user-1")
    }

    @Test("still checks aud, iss, sub and the times")
    func stillChecksClaims() throws {
        let bed = FirebaseTestBed(emulatorMode: true)
        let changes: [(String, @Sendable (inout JSONObject) -> Void)] = [
            ("is not the project id", { $0["aud"] = "other" }),
            ("iss", { $0["iss"] = "https://securetoken.google.com/other" }),
            ("sub is empty", { $0["sub"] = "" }),
            ("token expired", { claims in
                claims["iat"] = .number(1_000)
                claims["exp"] = .number(2_000)
            }),
            ("iat is in the future", { claims in
                claims["iat"] = .number(1_750_000_000 + 500)
                claims["exp"] = .number(1_750_000_000 + 5_000)
            }),
        ]
        for (reason, change) in changes {
            var claims = bed.minter.claims(issuedAt: bed.now)
            change(&claims)
            let outcome = bed.outcome(try bed.minter.emulatorToken(claims: claims))
            #expect(outcome.invalidReason?.contains(reason) == true, "\(reason): \(outcome)")
        }
    }

    @Test("refuses RS256 tokens and unsigned tokens with a signature")
    func refusesOthers() throws {
        let bed = FirebaseTestBed(emulatorMode: true)
        #expect(bed.outcome(try bed.minter.token(now: bed.now)).invalidReason?.contains("alg must be none") == true)
        let signedNone = try bed.minter.sign(
            header: ["alg": "none", "typ": "JWT"], claims: bed.minter.claims(issuedAt: bed.now), signature: .literal("AAAA"))
        #expect(bed.outcome(signedNone).invalidReason?.contains("empty signature") == true)
    }
}
