import FirebaseAdmin
import Logging
import Synchronization
import TestSupport

/// A fake Google, a clock, and the production types wired to them.
struct FirebaseTestBed {
    let clock: ManualClock<Double>
    let fake: FakeGoogle
    let transport: InProcessTransport
    let logs: LogCapture
    let keyCache: PublicKeyCache
    let verifier: IDTokenVerifier
    let minter: TokenMinter

    init(
        clockSkew: Int = 60, cacheCapacity: Int = 10_000, emulatorMode: Bool = false,
        keyCacheConfiguration: PublicKeyCache.Configuration = .init()
    ) {
        let clock = ManualClock<Double>()
        let fake = FakeGoogle(now: clock.closure)
        let transport = InProcessTransport(fake: fake)
        let logs = LogCapture()
        let keyCache = PublicKeyCache(
            source: HTTPCertificateSource(url: FakeGoogle.certificatesURL, transport: transport),
            configuration: keyCacheConfiguration, clock: clock.wallClock, logger: logs.logger(label: "keys"))
        self.clock = clock
        self.fake = fake
        self.transport = transport
        self.logs = logs
        self.keyCache = keyCache
        self.verifier = IDTokenVerifier(
            projectId: "locify-test", keys: keyCache, clockSkew: clockSkew, emulatorMode: emulatorMode,
            cacheCapacity: cacheCapacity, clock: clock.wallClock, logger: logs.logger(label: "verifier"))
        self.minter = TokenMinter(projectId: "locify-test", key: TestKeys.primary)
    }

    var now: Double { clock.now }

    /// The result of verifying `token`, for `#expect` comparisons.
    func outcome(_ token: String) -> Result<VerifiedIDToken, IDTokenError> {
        do throws(IDTokenError) {
            return .success(try verifier.verify(token))
        } catch {
            return .failure(error)
        }
    }
}

extension Result where Failure == IDTokenError {
    /// The rejection reason, when the token was refused as invalid.
    var invalidReason: String? {
        if case .failure(.invalid(let reason)) = self { return reason }
        return nil
    }
}
