@testable import FirebaseAdmin
import Testing

@Suite("VerifiedTokenCache")
struct VerifiedTokenCacheTests {
    private func digest(_ index: Int) throws -> SHA256Digest {
        try #require(SHA256Digest(of: Array("token-\(index)".utf8)))
    }

    private func token(_ index: Int) -> VerifiedIDToken {
        VerifiedIDToken(uid: "u\(index)", email: nil, name: nil, issuedAt: 0, expiresAt: 100, authTime: nil)
    }

    @Test("stays within its capacity, evicting the oldest entries")
    func bounded() throws {
        let cache = VerifiedTokenCache(capacity: 10)
        for index in 0..<100 {
            cache.insert(try digest(index), token: token(index), validUntil: 1_000, now: 0)
            #expect(cache.count <= 10)
        }
        #expect(cache.lookup(try digest(99), now: 0) == .hit(token(99)))
        #expect(cache.lookup(try digest(0), now: 0) == .miss)
    }

    @Test("evicts expired entries before live ones")
    func expiredFirst() throws {
        let cache = VerifiedTokenCache(capacity: 10)
        for index in 0..<5 { cache.insert(try digest(index), token: token(index), validUntil: 50, now: 0) }
        for index in 5..<10 { cache.insert(try digest(index), token: token(index), validUntil: 1_000, now: 0) }
        cache.insert(try digest(10), token: token(10), validUntil: 1_000, now: 60)
        #expect(cache.count == 6)
        for index in 5...10 { #expect(cache.lookup(try digest(index), now: 60) == .hit(token(index))) }
    }

    @Test("an entry past its validity is reported expired and dropped")
    func expiry() throws {
        let cache = VerifiedTokenCache(capacity: 10)
        cache.insert(try digest(1), token: token(1), validUntil: 100, now: 0)
        #expect(cache.lookup(try digest(1), now: 100) == .hit(token(1)))
        #expect(cache.lookup(try digest(1), now: 100.5) == .expired)
        #expect(cache.lookup(try digest(1), now: 100.5) == .miss)
    }

    @Test("SHA-256 matches a known vector")
    func sha256() throws {
        let empty = try #require(SHA256Digest(of: [UInt8]()))
        #expect(empty.word0 == 0xe3b0_c442_98fc_1c14)
        #expect(empty.word3 == 0xa495_991b_7852_b855)
    }
}
