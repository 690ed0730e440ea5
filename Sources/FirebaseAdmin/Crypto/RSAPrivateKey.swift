internal import CLibCrypto

/// An RSA private key that produces RS256 signatures (service-account assertions, test tokens).
///
/// Accepts PKCS#8 (`BEGIN PRIVATE KEY`) and PKCS#1 (`BEGIN RSA PRIVATE KEY`) PEM. Owns its
/// OpenSSL `EVP_PKEY` and frees it in `deinit`.
public final class RSAPrivateKey: Sendable {
    // safe because the EVP_PKEY is never mutated after init and OpenSSL allows concurrent use of a key.
    nonisolated(unsafe) private let key: OpaquePointer

    /// Loads an unencrypted RSA private key from PEM text.
    public init(pem: String) throws(CryptoKeyError) {
        let key = try RSAPublicKey.readPEM(pem, what: "private key") { bio in
            PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA else {
            EVP_PKEY_free(key)
            throw CryptoKeyError("private key is not RSA")
        }
        self.key = key
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// The RS256 signature (RSASSA-PKCS1-v1_5, SHA-256) of `message`.
    public func sign(_ message: [UInt8]) throws(CryptoKeyError) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw CryptoKeyError.fromOpenSSL("EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else {
            throw CryptoKeyError.fromOpenSSL("EVP_DigestSignInit failed")
        }
        var length = 0
        let sized = message.withUnsafeBufferPointer { bytes in
            EVP_DigestSign(context, nil, &length, bytes.baseAddress, bytes.count)
        }
        guard sized == 1, length > 0 else { throw CryptoKeyError.fromOpenSSL("EVP_DigestSign (size) failed") }
        var signature = [UInt8](repeating: 0, count: length)
        let signed = signature.withUnsafeMutableBufferPointer { output in
            message.withUnsafeBufferPointer { bytes in
                EVP_DigestSign(context, output.baseAddress, &length, bytes.baseAddress, bytes.count)
            }
        }
        guard signed == 1 else { throw CryptoKeyError.fromOpenSSL("EVP_DigestSign failed") }
        return Array(signature.prefix(length))
    }
}
