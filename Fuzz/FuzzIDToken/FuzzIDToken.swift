import FirebaseAdmin
import FuzzSupport
import HTTPClient
import JSON
import Logging
import Primitives
import TestSupport

/// Fuzzes the token front: `IDTokenVerifier.verify` (RS256 with a fixed key set, and Auth
/// emulator mode), the `JSONParser` it relies on, and the headers of Google's responses.
///
/// The first input byte picks a mode: 0 the rest is the token text; 1 the rest is
/// `header JSON NUL claims JSON NUL signature bytes`, base64url-encoded by the harness so the
/// fuzzer reaches the claim checks without having to learn base64; 2 the rest is JSON text,
/// parsed, written back and parsed again (the round trip must give the same value); 3 the rest
/// is `Cache-Control value NUL Retry-After value NUL status digits`, answered by a fake Google to
/// the key fetch, a Storage delete and an account delete (no header may trap; max-age and
/// Retry-After must come out finite and non-negative). An accepted token must satisfy the rules
/// the verifier promises (docs/ARCHITECTURE.md section 6).
@main
enum FuzzIDToken {
    static func main() {
        FuzzHarness.main(name: "id-token") { input in
            guard let mode = input.first else { return }
            let rest = Array(input.dropFirst())
            switch mode % 4 {
            case 0:
                verifyWithBoth(String(decoding: rest, as: UTF8.self))
            case 1:
                let parts = rest.split(separator: 0, maxSplits: 2, omittingEmptySubsequences: false)
                let header = parts.first.map(Array.init) ?? []
                let claims = parts.count > 1 ? Array(parts[1]) : []
                let signature = parts.count > 2 ? Array(parts[2]) : []
                verifyWithBoth(Base64URL.encode(header) + "." + Base64URL.encode(claims) + "." + Base64URL.encode(signature))
            case 2:
                roundTrip(rest)
            default:
                googleHeaders(rest)
            }
        }
    }

    /// The fixed clock: 2027-01-15T08:00:00Z (the seed tokens are valid then).
    static let now: Double = 1_800_000_000
    static let clock = WallClock { .seconds(now) }
    static let projectID = TestConstants.projectID

    static let quiet = Logger(label: "fuzz") { _ in SwiftLogNoOpLogHandler() }

    /// RS256 verification against `TestKeys.primary` only (no cache, so each input stands alone).
    /// The key cache may wait long for its one fetch (a slow sanitized build is no failure).
    static let signedVerifier = IDTokenVerifier(
        projectId: projectID,
        keys: PublicKeyCache(
            source: FixedCertificates(), configuration: PublicKeyCache.Configuration(fetchWait: 60), clock: clock,
            logger: quiet),
        cacheCapacity: 0, clock: clock, logger: quiet)

    static let emulatorVerifier = IDTokenVerifier(
        projectId: projectID, keys: nil, emulatorMode: true, cacheCapacity: 0, clock: clock, logger: quiet)

    struct FixedCertificates: CertificateSource {
        func fetchCertificates() throws -> CertificateSet {
            CertificateSet(certificates: [TestKeys.primary.kid: TestKeys.primary.certificatePEM], maxAge: 1e9)
        }
    }

    static func verifyWithBoth(_ token: String) {
        for verifier in [signedVerifier, emulatorVerifier] {
            do {
                let verified = try verifier.verify(token)
                check(verified, verifier: verifier)
            } catch {
                switch error {
                case .invalid: break
                case .keysUnavailable(let reason): fatalError("keys unavailable with a fixed key set: \(reason)")
                }
            }
        }
    }

    /// What an accepted token guarantees (docs/ARCHITECTURE.md section 6).
    static func check(_ token: VerifiedIDToken, verifier: IDTokenVerifier) {
        let scalars = token.uid.unicodeScalars
        precondition(!scalars.isEmpty && scalars.count <= 128, "uid length \(scalars.count)")
        precondition(!scalars.contains { $0.properties.generalCategory == .control }, "uid with a control character")
        let skew = Int64(verifier.clockSkew)
        precondition(token.expiresAt + skew >= Int64(now) - 1, "expired token accepted")
        precondition(token.issuedAt - skew <= Int64(now), "token from the future accepted")
        precondition(token.expiresAt > token.issuedAt - 1, "exp not after iat")
    }

    /// Parse, write, parse again: the same value (the server echoes parsed strings verbatim).
    static func roundTrip(_ bytes: [UInt8]) {
        for depth in [16, 64] {
            guard let value = try? JSONParser.parse(bytes, maxDepth: depth) else { continue }
            let written = JSONWriter.encode(value)
            do {
                let reparsed = try JSONParser.parse(written, maxDepth: depth)
                precondition(reparsed == value, "round trip changed the value: \(String(decoding: written, as: UTF8.self))")
            } catch {
                fatalError("the writer's output does not parse (\(error)): \(String(decoding: written, as: UTF8.self))")
            }
        }
    }
}

/// Google's responses with fuzzed headers (mode 3).
extension FuzzIDToken {
    /// Answers every request with `status`, the two fuzzed headers and, for the key endpoint, a
    /// valid certificate body (so the parse reaches the headers).
    struct HeaderTransport: HTTPTransport {
        let status: Int
        let cacheControl: String
        let retryAfter: String

        func send(_ request: TransportRequest) throws -> TransportResponse {
            let headers = [("Cache-Control", cacheControl), ("Retry-After", retryAfter), ("Content-Type", "application/json")]
            if request.url.contains("x509") {
                let body = JSONWriter.encode(.object([TestKeys.primary.kid: .string(TestKeys.primary.certificatePEM)]))
                return TransportResponse(status: 200, headers: headers, body: body)
            }
            return TransportResponse(status: status, headers: headers, body: Array(#"{"error":{"message":"fuzz"}}"#.utf8))
        }
    }

    static func googleHeaders(_ bytes: [UInt8]) {
        let parts = bytes.split(separator: 0, maxSplits: 2, omittingEmptySubsequences: false)
        let cacheControl = String(decoding: parts.first ?? [], as: UTF8.self)
        let retryAfter = parts.count > 1 ? String(decoding: parts[1], as: UTF8.self) : ""
        let statusText = parts.count > 2 ? String(decoding: parts[2].prefix(3), as: UTF8.self) : ""
        let status = Int(statusText).map { 100 + $0 % 500 } ?? 503

        if let maxAge = CacheControl.maxAge(cacheControl) {
            precondition(maxAge.isFinite && maxAge >= 0, "max-age \(maxAge) from \(cacheControl.debugDescription)")
        }
        let transport = HeaderTransport(status: status, cacheControl: cacheControl, retryAfter: retryAfter)
        do {
            let set = try HTTPCertificateSource(url: HTTPCertificateSource.googleURL, transport: transport).fetchCertificates()
            precondition(set.maxAge.map { $0.isFinite && $0 >= 0 } ?? true, "certificate max-age \(String(describing: set.maxAge))")
        } catch {
            fatalError("a valid certificate body with fuzzed headers was refused: \(error)")
        }
        let storage = CloudStorageClient(transport: transport, tokens: nil)
        let identity = IdentityToolkitClient(transport: transport, tokens: StaticAccessToken("fuzz"))
        do throws(GoogleAPIError) {
            try storage.deleteObject(bucket: "b", name: "locations/u/a.jpg")
        } catch {
            checkRetryAfter(error, header: retryAfter)
        }
        do throws(GoogleAPIError) {
            try identity.deleteAccount(projectId: projectID, uid: "u")
        } catch {
            checkRetryAfter(error, header: retryAfter)
        }
    }

    static func checkRetryAfter(_ error: GoogleAPIError, header: String) {
        if let wait = error.retryAfter {
            precondition(wait.isFinite && wait >= 0, "Retry-After \(wait) from \(header.debugDescription)")
        }
    }
}
