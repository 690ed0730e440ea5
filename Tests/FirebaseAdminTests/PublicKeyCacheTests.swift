import Dispatch
import FirebaseAdmin
import Foundation
import HTTPClient
import Synchronization
import Testing
import TestSupport

/// A certificate source whose fetches after the first block until released, to prove that
/// requests are not stalled by a background refresh.
final class GatedCertificateSource: CertificateSource {
    private let gate = DispatchSemaphore(value: 0)
    private let entered = DispatchSemaphore(value: 0)
    private let fetches = Mutex(0)

    var fetchCount: Int { fetches.withLock { $0 } }

    func fetchCertificates() throws -> CertificateSet {
        let number = fetches.withLock { count in
            count += 1
            return count
        }
        if number > 1 {
            entered.signal()
            gate.wait()
        }
        return CertificateSet(certificates: [TestKeys.primary.kid: TestKeys.primary.certificatePEM], maxAge: 600)
    }

    /// Waits (generously) until a blocked fetch has started.
    func waitUntilBlocked() -> Bool { entered.wait(timeout: .now() + 30) == .success }

    func release() { gate.signal() }
}

@Suite("PublicKeyCache")
struct PublicKeyCacheTests {
    private func key(_ bed: FirebaseTestBed, _ kid: String = TestKeys.primary.kid) throws -> RSAPublicKey? {
        try bed.keyCache.publicKey(forKeyID: kid)
    }

    @Test("honours max-age: no refetch before expiry, a refetch after it")
    func honoursMaxAge() throws {
        let bed = FirebaseTestBed()
        bed.fake.certificatesMaxAge = 600
        #expect(try key(bed) != nil)
        bed.clock.advance(by: 500)
        #expect(try key(bed) != nil)
        bed.keyCache.waitForBackgroundRefresh()
        #expect(bed.fake.requestCount(.certificates) == 1)
        bed.clock.advance(by: 101)
        #expect(try key(bed) != nil)
        bed.keyCache.waitForBackgroundRefresh()
        #expect(bed.fake.requestCount(.certificates) == 2)
        #expect(try key(bed) != nil)
        bed.keyCache.waitForBackgroundRefresh()
        #expect(bed.fake.requestCount(.certificates) == 2)
    }

    @Test("caches five minutes when the response has no max-age")
    func defaultMaxAge() throws {
        let bed = FirebaseTestBed()
        bed.fake.certificatesMaxAge = nil
        #expect(try key(bed) != nil)
        bed.clock.advance(by: 239)
        #expect(try key(bed) != nil)
        bed.keyCache.waitForBackgroundRefresh()
        #expect(bed.fake.requestCount(.certificates) == 1)
        bed.clock.advance(by: 62)
        #expect(try key(bed) != nil)
        bed.keyCache.waitForBackgroundRefresh()
        #expect(bed.fake.requestCount(.certificates) == 2)
    }

    @Test("refreshes in the background shortly before expiry, then serves the new lifetime")
    func backgroundRefreshBeforeExpiry() throws {
        let bed = FirebaseTestBed()
        bed.fake.certificatesMaxAge = 600
        #expect(try key(bed) != nil)
        bed.clock.advance(by: 550)
        #expect(try key(bed) != nil)
        bed.keyCache.waitForBackgroundRefresh()
        #expect(bed.fake.requestCount(.certificates) == 2)
        bed.clock.advance(by: 480)
        #expect(try key(bed) != nil)
        bed.keyCache.waitForBackgroundRefresh()
        #expect(bed.fake.requestCount(.certificates) == 2)
    }

    @Test("a background refresh never stalls requests while keys are cached")
    func refreshDoesNotStall() throws {
        let clock = ManualClock<Double>()
        let source = GatedCertificateSource()
        let cache = PublicKeyCache(source: source, clock: clock.wallClock, logger: LogCapture().logger())
        #expect(try cache.publicKey(forKeyID: TestKeys.primary.kid) != nil)
        clock.advance(by: 590)
        #expect(try cache.publicKey(forKeyID: TestKeys.primary.kid) != nil)
        #expect(source.waitUntilBlocked())
        // The refresh is blocked inside the source; lookups still answer from the cache.
        for _ in 0..<10 { #expect(try cache.publicKey(forKeyID: TestKeys.primary.kid) != nil) }
        #expect(source.fetchCount == 2)
        source.release()
        cache.waitForBackgroundRefresh()
    }

    @Test("a flood of unknown kids causes one refetch per interval")
    func unknownKidFlood() throws {
        let bed = FirebaseTestBed()
        #expect(try key(bed) != nil)
        for index in 0..<200 { #expect(try key(bed, "forged-\(index)") == nil) }
        #expect(bed.fake.requestCount(.certificates) == 2)
        bed.clock.advance(by: 59)
        #expect(try key(bed, "forged-again") == nil)
        #expect(bed.fake.requestCount(.certificates) == 2)
        bed.clock.advance(by: 2)
        #expect(try key(bed, "forged-later") == nil)
        #expect(bed.fake.requestCount(.certificates) == 3)
    }

    @Test("concurrent unknown kids cause a single refetch")
    func concurrentUnknownKids() async throws {
        let bed = FirebaseTestBed()
        #expect(try key(bed) != nil)
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<50 {
                group.addTask { _ = try? bed.keyCache.publicKey(forKeyID: "forged-\(index)") }
            }
        }
        #expect(bed.fake.requestCount(.certificates) == 2)
    }

    @Test("keeps serving the last good keys when the endpoint fails")
    func servesStaleKeysOnFailure() throws {
        let bed = FirebaseTestBed()
        bed.fake.certificatesMaxAge = 600
        let token = try bed.minter.token(now: bed.now + 700)
        #expect(try key(bed) != nil)
        bed.fake.certificatesFailing = true
        bed.clock.advance(by: 700)
        #expect(try key(bed) != nil)
        bed.keyCache.waitForBackgroundRefresh()
        #expect(bed.fake.requestCount(.certificates) == 2)
        #expect(try key(bed) != nil)
        _ = try bed.verifier.verify(token)
        #expect(bed.logs.all.contains { $0.level == .warning && $0.message.contains("keeping the last good keys") })
        bed.fake.certificatesFailing = false
        bed.clock.advance(by: 11)
        #expect(try key(bed) != nil)
        bed.keyCache.waitForBackgroundRefresh()
        #expect(bed.fake.requestCount(.certificates) >= 3)
    }

    @Test("keys past their lifetime are used for expiredKeyGrace (one hour) while refreshes fail, then refused until a refresh succeeds")
    func expiredKeysEndAfterGrace() throws {
        let bed = FirebaseTestBed()
        bed.fake.certificatesMaxAge = 600
        #expect(PublicKeyCache.Configuration().expiredKeyGrace == 3600)
        #expect(try key(bed) != nil)
        bed.fake.certificatesFailing = true
        bed.clock.advance(by: 600 + 3599)
        #expect(try key(bed) != nil, "within the grace the last good keys still verify")
        bed.keyCache.waitForBackgroundRefresh()
        bed.clock.advance(by: 11)
        do {
            let key = try bed.keyCache.publicKey(forKeyID: TestKeys.primary.kid)
            Issue.record("an hour past their lifetime the keys must not be used: got \(String(describing: key))")
        } catch {
            guard case .keysUnavailable(let reason) = error else {
                Issue.record("expected keysUnavailable, got \(error)")
                return
            }
            #expect(reason.contains("cannot fetch") || reason.contains("expired"), "\(reason)")
        }
        bed.keyCache.waitForBackgroundRefresh()
        bed.clock.advance(by: 11)
        #expect(throws: IDTokenError.self) { try key(bed) }
        bed.keyCache.waitForBackgroundRefresh()
        bed.fake.certificatesFailing = false
        bed.clock.advance(by: 11)
        #expect(try key(bed) != nil, "a successful refresh makes them usable again")
    }

    @Test("nothing cached and the fetch fails: keysUnavailable, retried after a pause")
    func keysUnavailable() throws {
        let bed = FirebaseTestBed()
        bed.fake.certificatesFailing = true
        #expect(throws: IDTokenError.self) { try key(bed) }
        do {
            _ = try bed.keyCache.publicKey(forKeyID: TestKeys.primary.kid)
            Issue.record("expected keysUnavailable")
        } catch {
            guard case .keysUnavailable = error else {
                Issue.record("expected keysUnavailable, got \(error)")
                return
            }
        }
        #expect(bed.fake.requestCount(.certificates) == 1)
        bed.fake.certificatesFailing = false
        bed.clock.advance(by: 11)
        #expect(try key(bed) != nil)
        #expect(bed.fake.requestCount(.certificates) == 2)
    }

    @Test("prefetch loads the keys or reports them unavailable")
    func prefetch() throws {
        let bed = FirebaseTestBed()
        bed.fake.publish([TestKeys.primary, TestKeys.secondary])
        try bed.keyCache.prefetch()
        #expect(Set(bed.keyCache.keyIDs) == [TestKeys.primary.kid, TestKeys.secondary.kid])
        bed.fake.certificatesFailing = true
        #expect(throws: IDTokenError.self) { try bed.keyCache.prefetch() }
        #expect(Set(bed.keyCache.keyIDs) == [TestKeys.primary.kid, TestKeys.secondary.kid])
    }

    @Test("unreadable certificates are skipped; a set with none usable is a failure")
    func unreadableCertificates() throws {
        let bed = FirebaseTestBed()
        bed.fake.certificates = ["bad": "not a certificate", "ec": TestKeys.ecCertificatePEM, TestKeys.primary.kid: TestKeys.primary.certificatePEM]
        #expect(try key(bed) != nil)
        #expect(bed.keyCache.keyIDs == [TestKeys.primary.kid])

        let other = FirebaseTestBed()
        other.fake.certificates = ["bad": "not a certificate"]
        #expect(throws: IDTokenError.self) { try key(other) }
    }
}

/// A certificate source that hangs until released (or 30 s), counting fetches.
final class HangingCertificateSource: CertificateSource {
    private let gate = DispatchSemaphore(value: 0)
    private let fetches = Mutex(0)

    var fetchCount: Int { fetches.withLock { $0 } }

    func fetchCertificates() throws -> CertificateSet {
        fetches.withLock { $0 += 1 }
        _ = gate.wait(timeout: .now() + 30)
        throw TransportError("timed out")
    }

    func release() { gate.signal() }
}

@Suite("PublicKeyCache: one fetch in flight")
struct PublicKeyCacheSingleFetchTests {
    @Test("50 concurrent lookups with nothing cached and a hanging endpoint: one fetch, none waits for the hanging fetch")
    func hangingEndpoint() throws {
        let clock = ManualClock<Double>()
        let source = HangingCertificateSource()
        let cache = PublicKeyCache(source: source, clock: clock.wallClock, logger: LogCapture().logger())
        let durations = Locked<[Double]>([])
        let unavailable = Locked(0)
        try runOnThreads(50) { _ in
            let start = Date()
            do throws(IDTokenError) {
                _ = try cache.publicKey(forKeyID: TestKeys.primary.kid)
            } catch {
                if case .keysUnavailable = error { unavailable.withLock { $0 += 1 } }
            }
            durations.withLock { $0.append(Date().timeIntervalSince(start)) }
        }
        #expect(unavailable.value == 50)
        #expect(source.fetchCount == 1)
        // The fetch hangs until released: any bound proves nobody waited for it; 10 s leaves room
        // for a loaded sanitizer run (the 1 s figure is measured by hand, RELIABILITY.md).
        #expect((durations.value.max() ?? 0) < 10)
        // Once the fetch failed, none starts for 10 s; then one does.
        source.release()
        cache.waitForBackgroundRefresh()
        #expect(throws: IDTokenError.self) { try cache.publicKey(forKeyID: TestKeys.primary.kid) }
        #expect(source.fetchCount == 1)
        clock.advance(by: 9)
        #expect(throws: IDTokenError.self) { try cache.publicKey(forKeyID: TestKeys.primary.kid) }
        #expect(source.fetchCount == 1)
        clock.advance(by: 2)
        source.release()
        #expect(throws: IDTokenError.self) { try cache.publicKey(forKeyID: TestKeys.primary.kid) }
        #expect(source.fetchCount == 2)
        cache.waitForBackgroundRefresh()
    }

    @Test("a fetch answering within the wait serves the lookup that started it")
    func fastFetchServesTrigger() throws {
        let bed = FirebaseTestBed()
        #expect(try bed.keyCache.publicKey(forKeyID: TestKeys.primary.kid) != nil)
        #expect(bed.fake.requestCount(.certificates) == 1)
    }

    @Test("max-age is capped at a day")
    func maxAgeCapped() throws {
        let bed = FirebaseTestBed()
        bed.fake.certificatesMaxAge = 999_999_999
        #expect(try bed.keyCache.publicKey(forKeyID: TestKeys.primary.kid) != nil)
        bed.clock.advance(by: 86_401)
        #expect(try bed.keyCache.publicKey(forKeyID: TestKeys.primary.kid) != nil)
        bed.keyCache.waitForBackgroundRefresh()
        #expect(bed.fake.requestCount(.certificates) == 2)
    }
}
