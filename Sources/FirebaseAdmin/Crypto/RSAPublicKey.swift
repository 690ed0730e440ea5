internal import CLibCrypto

/// An RSA public key used to check RS256 signatures (RSASSA-PKCS1-v1_5 with SHA-256).
///
/// Owns its OpenSSL `EVP_PKEY` and frees it in `deinit`. Immutable after creation, so one key is
/// safely shared by many threads (each verification uses its own digest context).
public final class RSAPublicKey: Sendable {
    /// The smallest modulus accepted, in bits: shorter RSA keys are breakable or close to it
    /// (NIST SP 800-131A disallows them for signatures); Google signs with 2048-bit keys.
    public static let minimumBits: Int32 = 2048

    // safe because the EVP_PKEY is never mutated after init and OpenSSL allows concurrent use of a key.
    nonisolated(unsafe) private let key: OpaquePointer

    /// Loads the public key of an X.509 certificate in PEM form (Google's key endpoint format).
    public init(certificatePEM: String) throws(CryptoKeyError) {
        let certificate = try Self.readPEM(certificatePEM, what: "certificate") { bio in
            PEM_read_bio_X509(bio, nil, nil, nil)
        }
        defer { X509_free(certificate) }
        guard let key = X509_get_pubkey(certificate) else {
            throw CryptoKeyError.fromOpenSSL("certificate has no usable public key")
        }
        self.key = try Self.checked(key, what: "certificate key")
    }

    /// Loads a `BEGIN PUBLIC KEY` (SubjectPublicKeyInfo) PEM.
    public init(publicKeyPEM: String) throws(CryptoKeyError) {
        let key = try Self.readPEM(publicKeyPEM, what: "public key") { bio in
            PEM_read_bio_PUBKEY(bio, nil, nil, nil)
        }
        self.key = try Self.checked(key, what: "public key")
    }

    deinit {
        EVP_PKEY_free(key)
    }

    /// Whether `signature` is a valid RS256 signature of `message` under this key.
    public func verify(signature: [UInt8], message: [UInt8]) -> Bool {
        guard let context = EVP_MD_CTX_new() else {
            ERR_clear_error()
            return false
        }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1 else {
            ERR_clear_error()
            return false
        }
        let result = signature.withUnsafeBufferPointer { signatureBytes in
            message.withUnsafeBufferPointer { messageBytes in
                EVP_DigestVerify(
                    context, signatureBytes.baseAddress, signatureBytes.count, messageBytes.baseAddress,
                    messageBytes.count)
            }
        }
        guard result == 1 else {
            ERR_clear_error()
            return false
        }
        return true
    }

    /// `key` when it is RSA of at least `minimumBits`; otherwise frees it and throws.
    private static func checked(_ key: OpaquePointer, what: String) throws(CryptoKeyError) -> OpaquePointer {
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA else {
            EVP_PKEY_free(key)
            throw CryptoKeyError("\(what) is not RSA")
        }
        let bits = EVP_PKEY_get_bits(key)
        guard bits >= minimumBits else {
            EVP_PKEY_free(key)
            throw CryptoKeyError("\(what) is too short: RSA \(bits) bits, at least \(minimumBits) required")
        }
        return key
    }

    /// Reads one PEM object from `text` with `read`, freeing the temporary BIO.
    static func readPEM(
        _ text: String, what: String, _ read: (OpaquePointer) -> OpaquePointer?
    ) throws(CryptoKeyError) -> OpaquePointer {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.count < Int(Int32.max) else { throw CryptoKeyError("empty \(what) PEM") }
        let object: OpaquePointer? = bytes.withUnsafeBytes { buffer -> OpaquePointer? in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return read(bio)
        }
        guard let object else { throw CryptoKeyError.fromOpenSSL("cannot read \(what) PEM") }
        return object
    }
}
