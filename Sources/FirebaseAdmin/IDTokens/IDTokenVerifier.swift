import FoundationEssentials
import JSON
import LocifyRules
import Logging
import Primitives
import Synchronization

/// Verifies Firebase ID tokens exactly as docs/ARCHITECTURE.md section 6 prescribes: structure, header, claims,
/// then the RS256 signature with the one key named by `kid`.
///
/// Verified tokens are remembered (keyed by SHA-256 of the token) until `exp + skew`, so a client
/// sending the same token on every request costs one hash, not one RSA verification.
public final class IDTokenVerifier: Sendable {
    /// Tokens longer than this (bytes) are refused before any parsing.
    public static let maximumTokenLength = 16_384

    /// The Firebase project id tokens must be issued for.
    public let projectId: String
    /// Allowance in seconds on `exp`, `iat` and `auth_time` (0-300; default 60).
    public let clockSkew: Int
    /// Whether unsigned Auth-emulator tokens (`alg: none`) are accepted instead of RS256 ones.
    public let emulatorMode: Bool

    private let keys: PublicKeyCache?
    private let issuer: String
    private let cache: VerifiedTokenCache
    private let clock: WallClock
    private let logger: Logger
    private let signatureChecks = Atomic<Int>(0)

    /// A verifier for `projectId`. `keys` may be nil only in emulator mode. `cacheCapacity` bounds
    /// the verified-token cache (0 disables it); `clock` is the wall clock.
    public init(
        projectId: String, keys: PublicKeyCache?, clockSkew: Int = 60, emulatorMode: Bool = false,
        cacheCapacity: Int = 10_000, clock: WallClock = .system,
        logger: Logger
    ) {
        self.projectId = projectId
        self.keys = keys
        self.clockSkew = min(max(clockSkew, 0), 300)
        self.emulatorMode = emulatorMode
        self.issuer = "https://securetoken.google.com/" + projectId
        self.cache = VerifiedTokenCache(capacity: cacheCapacity)
        self.clock = clock
        self.logger = logger
        if emulatorMode {
            logger.warning("ID-token verifier in Auth emulator mode: unsigned tokens are accepted. Never use in production.")
        }
    }

    /// How many RSA signature verifications ran (cache hits run none); for metrics and tests.
    public var signatureVerificationCount: Int { signatureChecks.load(ordering: .relaxed) }

    /// Verifies `token` and returns who it identifies.
    public func verify(_ token: String) throws(IDTokenError) -> VerifiedIDToken {
        do {
            return try verifyUnlogged(token)
        } catch {
            if case .invalid(let reason) = error {
                logger.debug("ID token rejected", metadata: ["reason": "\(reason)"])
            }
            throw error
        }
    }

    /// `token` when it was verified before and is still valid (the verified-token cache); nil
    /// when it would have to be checked. Never parses the token, checks a signature or waits for
    /// keys, so it may answer on a thread that must not block. Throws `invalid` for a token too
    /// long or a cached token that has expired.
    public func cachedVerification(of token: String) throws(IDTokenError) -> VerifiedIDToken? {
        let bytes = Array(token.utf8)
        return try cachedVerification(of: bytes, digest: SHA256Digest(of: bytes), now: clock.seconds())
    }

    private func cachedVerification(
        of bytes: [UInt8], digest: SHA256Digest?, now time: Double
    ) throws(IDTokenError) -> VerifiedIDToken? {
        guard bytes.count <= Self.maximumTokenLength else {
            throw .invalid("token is longer than \(Self.maximumTokenLength) bytes")
        }
        guard let digest else { return nil }
        switch cache.lookup(digest, now: time) {
        case .hit(let verified): return verified
        case .expired: throw .invalid("token expired (cached)")
        case .miss: return nil
        }
    }

    private func verifyUnlogged(_ token: String) throws(IDTokenError) -> VerifiedIDToken {
        let bytes = Array(token.utf8)
        let time = clock.seconds()
        let skew = Double(clockSkew)
        let digest = SHA256Digest(of: bytes)
        if let verified = try cachedVerification(of: bytes, digest: digest, now: time) { return verified }

        // 1. Structure: three base64url segments.
        let dots = bytes.indices.filter { bytes[$0] == 0x2E }
        guard dots.count == 2 else { throw .invalid("token must have three segments, found \(dots.count + 1)") }
        let headerSegment = bytes[..<dots[0]]
        let payloadSegment = bytes[(dots[0] + 1)..<dots[1]]
        let signatureSegment = bytes[(dots[1] + 1)...]
        let header = try decodeObject(headerSegment, name: "header")
        let payload = try decodeObject(payloadSegment, name: "payload")

        // 2. Header.
        guard let alg = header["alg"]?.stringValue else { throw .invalid("header has no string alg") }
        if let typ = header["typ"] {
            guard let text = typ.stringValue, text.lowercased() == "jwt" else { throw .invalid("header typ is not JWT") }
        }
        var kid = ""
        if emulatorMode {
            guard alg == "none" else { throw .invalid("alg must be none in emulator mode, got \(Self.excerpt(alg))") }
            guard signatureSegment.isEmpty else { throw .invalid("emulator token must have an empty signature") }
        } else {
            guard alg == "RS256" else { throw .invalid("alg must be RS256, got \(Self.excerpt(alg))") }
            guard let keyID = header["kid"]?.stringValue, !keyID.isEmpty else { throw .invalid("header has no kid") }
            kid = keyID
        }

        // 3-6. Claims.
        let verified = try checkClaims(payload, now: time, skew: skew)

        // 7. Signature, with the key of that kid only.
        if !emulatorMode {
            guard !signatureSegment.isEmpty, let signature = Base64URL.decode(signatureSegment) else {
                throw .invalid("signature is not strict base64url")
            }
            guard let keys else { throw .keysUnavailable("no public-key cache configured") }
            guard let key = try keys.publicKey(forKeyID: kid) else {
                throw .invalid("no current Google key has kid \(Self.excerpt(kid))")
            }
            signatureChecks.add(1, ordering: .relaxed)
            guard key.verify(signature: signature, message: Array(bytes[..<dots[1]]))
            else {
                throw .invalid("signature does not verify")
            }
        }

        if let digest {
            cache.insert(digest, token: verified, validUntil: Double(verified.expiresAt) + skew, now: time)
        }
        return verified
    }

    private func decodeObject(_ segment: ArraySlice<UInt8>, name: String) throws(IDTokenError) -> JSONObject {
        guard !segment.isEmpty, let decoded = Base64URL.decode(segment) else {
            throw .invalid("\(name) is not strict base64url")
        }
        let value: JSONValue
        do {
            value = try JSONParser.parse(decoded, maxDepth: 16)
        } catch {
            throw .invalid("\(name) is not valid JSON (\(error.reason))")
        }
        guard let object = value.objectValue else { throw .invalid("\(name) is not a JSON object") }
        return object
    }

    private func checkClaims(_ payload: JSONObject, now: Double, skew: Double) throws(IDTokenError) -> VerifiedIDToken {
        guard case .string(let audience)? = payload["aud"] else { throw .invalid("aud is not a string") }
        guard audience.utf8.elementsEqual(projectId.utf8) else { throw .invalid("aud \(Self.excerpt(audience)) is not the project id") }
        guard case .string(let tokenIssuer)? = payload["iss"] else { throw .invalid("iss is not a string") }
        guard tokenIssuer.utf8.elementsEqual(issuer.utf8) else { throw .invalid("iss \(Self.excerpt(tokenIssuer)) is not \(issuer)") }
        guard case .string(let subject)? = payload["sub"] else { throw .invalid("sub is not a string") }
        let scalarCount = subject.unicodeScalars.count
        guard scalarCount > 0 else { throw .invalid("sub is empty") }
        guard scalarCount <= 128 else { throw .invalid("sub is longer than 128 code points") }
        guard !subject.unicodeScalars.contains(where: ControlCharacter.isControl) else {
            throw .invalid("sub contains a control character")
        }

        let expiry = try seconds(payload["exp"], claim: "exp")
        let issued = try seconds(payload["iat"], claim: "iat")
        guard expiry + skew >= now else { throw .invalid("token expired") }
        guard issued - skew <= now else { throw .invalid("iat is in the future") }
        guard expiry > issued else { throw .invalid("exp is not after iat") }
        var authTime: Int64?
        if let value = payload["auth_time"] {
            let seconds = try seconds(value, claim: "auth_time")
            guard seconds <= now + skew else { throw .invalid("auth_time is in the future") }
            authTime = Int64(seconds.rounded(.down))
        }
        return VerifiedIDToken(
            uid: subject, email: payload["email"]?.stringValue, name: payload["name"]?.stringValue,
            issuedAt: Int64(issued.rounded(.down)), expiresAt: Int64(expiry.rounded(.down)), authTime: authTime)
    }

    /// A time claim as unix seconds: a finite number within ±10^11 (so it fits Int64 safely).
    private func seconds(_ value: JSONValue?, claim: String) throws(IDTokenError) -> Double {
        guard case .number(let number)? = value else { throw .invalid("\(claim) is not a number") }
        guard number.isFinite, number.magnitude < 1e11 else { throw .invalid("\(claim) is out of range") }
        return number
    }

    /// A short, printable excerpt of attacker-controlled text for log reasons.
    static func excerpt(_ text: String) -> String {
        let printable = text.unicodeScalars.prefix(40).map { scalar in
            ControlCharacter.isControl(scalar) ? "?" : String(scalar)
        }
        return "\"" + printable.joined() + (text.unicodeScalars.count > 40 ? "…" : "") + "\""
    }
}
