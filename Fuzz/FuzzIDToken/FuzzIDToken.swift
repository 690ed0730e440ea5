import FirebaseAdmin
import FuzzSupport
import JSON
import Logging
import TestSupport

/// Fuzzes the token front: `IDTokenVerifier.verify` (RS256 with a fixed key set, and Auth
/// emulator mode) and the `JSONParser` it relies on.
///
/// The first input byte picks a mode: 0 the rest is the token text; 1 the rest is
/// `header JSON NUL claims JSON NUL signature bytes`, base64url-encoded by the harness so the
/// fuzzer reaches the claim checks without having to learn base64; 2 the rest is JSON text,
/// parsed, written back and parsed again (the round trip must give the same value). An accepted
/// token must satisfy the rules the verifier promises (FIREBASE.md section 1).
@main
enum FuzzIDToken {
    static func main() {
        FuzzHarness.main(name: "id-token") { input in
            guard let mode = input.first else { return }
            let rest = Array(input.dropFirst())
            switch mode % 3 {
            case 0:
                verifyWithBoth(String(decoding: rest, as: UTF8.self))
            case 1:
                let parts = rest.split(separator: 0, maxSplits: 2, omittingEmptySubsequences: false)
                let header = parts.first.map(Array.init) ?? []
                let claims = parts.count > 1 ? Array(parts[1]) : []
                let signature = parts.count > 2 ? Array(parts[2]) : []
                verifyWithBoth(Base64URL.encode(header) + "." + Base64URL.encode(claims) + "." + Base64URL.encode(signature))
            default:
                roundTrip(rest)
            }
        }
    }

    /// The fixed clock: 2027-01-15T08:00:00Z (the seed tokens are valid then).
    static let now: Double = 1_800_000_000
    static let projectID = TestConstants.projectID

    static let quiet = Logger(label: "fuzz") { _ in SwiftLogNoOpLogHandler() }

    /// RS256 verification against `TestKeys.primary` only (no cache, so each input stands alone).
    static let signedVerifier = IDTokenVerifier(
        projectId: projectID,
        keys: PublicKeyCache(source: FixedCertificates(), now: { now }, logger: quiet),
        cacheCapacity: 0, now: { now }, logger: quiet)

    static let emulatorVerifier = IDTokenVerifier(
        projectId: projectID, keys: nil, emulatorMode: true, cacheCapacity: 0, now: { now }, logger: quiet)

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

    /// What an accepted token guarantees (FIREBASE.md section 1).
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
