internal import CLibCrypto

/// A SHA-256 digest, hashable so it can key the verified-token cache.
struct SHA256Digest: Hashable, Sendable {
    let word0: UInt64
    let word1: UInt64
    let word2: UInt64
    let word3: UInt64

    /// The digest of `bytes`, or nil in the (never expected) case that OpenSSL fails.
    init?(of bytes: some Sequence<UInt8>) {
        let input = Array(bytes)
        var output = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let status = input.withUnsafeBytes { inputBytes in
            output.withUnsafeMutableBufferPointer { outputBytes in
                EVP_Digest(inputBytes.baseAddress, inputBytes.count, outputBytes.baseAddress, &length, EVP_sha256(), nil)
            }
        }
        guard status == 1, length == 32 else {
            ERR_clear_error()
            return nil
        }
        func word(_ index: Int) -> UInt64 {
            var value: UInt64 = 0
            for byte in output[(index * 8)..<(index * 8 + 8)] { value = value << 8 | UInt64(byte) }
            return value
        }
        word0 = word(0)
        word1 = word(1)
        word2 = word(2)
        word3 = word(3)
    }
}
