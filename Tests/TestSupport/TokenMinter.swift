internal import CLibCrypto
import FirebaseAdmin
import Foundation
import JSON
import Primitives

/// How a minted token is signed.
public enum TokenSignature: Sendable {
    /// RS256 with the pair's private key (a genuine signature when the pair is published).
    case rs256(TestKeyPair)
    /// HS256 with `secret` as the HMAC key (the classic "certificate as secret" forgery).
    case hs256(secret: [UInt8])
    /// The given text as the signature segment, verbatim (empty for emulator tokens).
    case literal(String)
}

/// Mints Firebase-style ID tokens for tests: valid ones, and every forged variant (arbitrary
/// header, claims, raw JSON text and signatures), plus Auth-emulator (`alg: none`) tokens.
public struct TokenMinter: Sendable {
    /// The project tokens are minted for (`aud`, and `iss` suffix).
    public var projectId: String
    /// The key valid tokens are signed with.
    public var key: TestKeyPair

    /// A minter of tokens for `projectId`, signed with `key`.
    public init(projectId: String = "locify-test", key: TestKeyPair = TestKeys.primary) {
        self.projectId = projectId
        self.key = key
    }

    /// The issuer Firebase uses for `projectId`.
    public var issuer: String { "https://securetoken.google.com/" + projectId }

    /// A well-formed header for `key` (override members to forge).
    public func header(kid: String? = nil) -> JSONObject {
        ["alg": "RS256", "kid": .string(kid ?? key.kid), "typ": "JWT"]
    }

    /// The claims of a valid token issued at `issuedAt` (unix seconds), valid for one hour.
    public func claims(
        uid: String = "user-1", issuedAt: Double, lifetime: Double = 3600, email: String? = "user@example.com",
        name: String? = "Test User"
    ) -> JSONObject {
        var claims: JSONObject = [
            "iss": .string(issuer), "aud": .string(projectId), "auth_time": .number(issuedAt - 30),
            "user_id": .string(uid), "sub": .string(uid), "iat": .number(issuedAt), "exp": .number(issuedAt + lifetime),
            "firebase": ["identities": [:], "sign_in_provider": "password"],
        ]
        if let email { claims["email"] = .string(email) }
        if let name { claims["name"] = .string(name) }
        return claims
    }

    /// A valid RS256 token for `uid`, issued at `now`.
    public func token(uid: String = "user-1", now: Double, lifetime: Double = 3600) throws -> String {
        try sign(header: header(), claims: claims(uid: uid, issuedAt: now, lifetime: lifetime))
    }

    /// A token with the given header and claims objects, signed as asked (default: RS256 with `key`).
    public func sign(header: JSONObject, claims: JSONObject, signature: TokenSignature? = nil) throws -> String {
        try Self.mint(
            headerJSON: JSONWriter.encode(.object(header)), claimsJSON: JSONWriter.encode(.object(claims)),
            signature: signature ?? .rs256(key))
    }

    /// A token from raw header and claims JSON text (for duplicate keys, arrays, bad JSON...).
    public func sign(headerText: String, claimsText: String, signature: TokenSignature? = nil) throws -> String {
        try Self.mint(headerJSON: Array(headerText.utf8), claimsJSON: Array(claimsText.utf8), signature: signature ?? .rs256(key))
    }

    /// An Auth-emulator token: `{"alg":"none","typ":"JWT"}`, these claims, empty signature.
    public func emulatorToken(claims: JSONObject) throws -> String {
        try Self.mint(
            headerJSON: Array(#"{"alg":"none","typ":"JWT"}"#.utf8), claimsJSON: JSONWriter.encode(.object(claims)),
            signature: .literal(""))
    }

    /// `base64url(header).base64url(claims).signature`.
    public static func mint(headerJSON: [UInt8], claimsJSON: [UInt8], signature: TokenSignature) throws -> String {
        let signingInput = Base64URL.encode(headerJSON) + "." + Base64URL.encode(claimsJSON)
        let signatureSegment: String
        switch signature {
        case .rs256(let pair):
            signatureSegment = Base64URL.encode(try pair.privateKey().sign(Array(signingInput.utf8)))
        case .hs256(let secret):
            signatureSegment = Base64URL.encode(try hmacSHA256(key: secret, message: Array(signingInput.utf8)))
        case .literal(let text):
            signatureSegment = text
        }
        return signingInput + "." + signatureSegment
    }

    /// HMAC-SHA256 of `message` under `key`.
    public static func hmacSHA256(key: [UInt8], message: [UInt8]) throws -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        var length = 0
        let result = key.withUnsafeBytes { keyBytes in
            message.withUnsafeBufferPointer { messageBytes in
                output.withUnsafeMutableBufferPointer { outputBytes in
                    EVP_Q_mac(
                        nil, "HMAC", nil, "SHA256", nil, keyBytes.baseAddress, keyBytes.count, messageBytes.baseAddress,
                        messageBytes.count, outputBytes.baseAddress, outputBytes.count, &length)
                }
            }
        }
        guard result != nil, length == 32 else { throw CryptoKeyError("HMAC-SHA256 failed") }
        return output
    }
}
