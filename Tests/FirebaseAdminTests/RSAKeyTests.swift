import FirebaseAdmin
import Testing
import TestSupport

@Suite("RSA keys")
struct RSAKeyTests {
    @Test("a signature from the private key verifies with the certificate's public key")
    func signAndVerify() throws {
        let message = Array("header.payload".utf8)
        let signature = try TestKeys.primary.privateKey().sign(message)
        #expect(signature.count == 256)
        let publicKey = try TestKeys.primary.publicKey()
        #expect(publicKey.verify(signature: signature, message: message))
        #expect(!publicKey.verify(signature: signature, message: Array("header.payloaD".utf8)))
        #expect(!publicKey.verify(signature: Array(signature.dropLast()), message: message))
        #expect(!publicKey.verify(signature: [], message: message))
        #expect(!(try TestKeys.attacker.publicKey()).verify(signature: signature, message: message))
    }

    @Test("PKCS#1 and PKCS#8 forms of one key produce signatures the same certificate accepts")
    func pkcs1AndPkcs8() throws {
        let message = Array("assertion".utf8)
        let pkcs8 = try RSAPrivateKey(pem: TestKeys.service.privateKeyPEM)
        let pkcs1 = try RSAPrivateKey(pem: TestKeys.servicePKCS1PEM)
        let certificate = try TestKeys.service.publicKey()
        #expect(certificate.verify(signature: try pkcs8.sign(message), message: message))
        #expect(certificate.verify(signature: try pkcs1.sign(message), message: message))
        #expect(try pkcs8.sign(message) == (try pkcs1.sign(message)), "RS256 is deterministic")
    }

    @Test("unreadable or non-RSA material is refused with an error")
    func refusesBadInput() {
        #expect(throws: CryptoKeyError.self) { try RSAPublicKey(certificatePEM: "") }
        #expect(throws: CryptoKeyError.self) { try RSAPublicKey(certificatePEM: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n") }
        #expect(throws: CryptoKeyError.self) { try RSAPublicKey(certificatePEM: TestKeys.ecCertificatePEM) }
        #expect(throws: CryptoKeyError.self) { try RSAPublicKey(certificatePEM: TestKeys.primary.privateKeyPEM) }
        #expect(throws: CryptoKeyError.self) { try RSAPrivateKey(pem: TestKeys.primary.certificatePEM) }
        #expect(throws: CryptoKeyError.self) { try RSAPrivateKey(pem: "garbage") }
    }

    @Test("an RSA key shorter than 2048 bits is refused, in a certificate and as a public key")
    func refusesShortKeys() throws {
        #expect(RSAPublicKey.minimumBits == 2048)
        let fromCertificate = #expect(throws: CryptoKeyError.self) { try RSAPublicKey(certificatePEM: Self.weakCertificatePEM) }
        #expect(fromCertificate?.description == "certificate key is too short: RSA 1024 bits, at least 2048 required")
        let fromPublicKey = #expect(throws: CryptoKeyError.self) { try RSAPublicKey(publicKeyPEM: Self.weakPublicKeyPEM) }
        #expect(fromPublicKey?.description == "public key is too short: RSA 1024 bits, at least 2048 required")
        // The 2048-bit test keys load.
        _ = try TestKeys.primary.publicKey()
    }

    /// A 1024-bit RSA key (`openssl req -x509 -newkey rsa:1024`), generated for this test only.
    static let weakCertificatePEM = """
        -----BEGIN CERTIFICATE-----
        MIICFDCCAX2gAwIBAgIUCUY1mN/rd7A5AXDarLzba2WMRQcwDQYJKoZIhvcNAQEL
        BQAwGzEZMBcGA1UEAwwQbG9jaWZ5LXRlc3Qtd2VhazAgFw0yNjExMjUxMjAzMDla
        GA8yMTI2MTEwMTEyMDMwOVowGzEZMBcGA1UEAwwQbG9jaWZ5LXRlc3Qtd2VhazCB
        nzANBgkqhkiG9w0BAQEFAAOBjQAwgYkCgYEAv0MM6coe2k0Md+bGpBJ9m2AGUbAx
        J7NUKm5TGSIV5ElPJANX5NacOTKOlMJPdr4vkEmu5Jn5k8TLZIdL8ZCLAGg3mezu
        bKago6J6jXkcHjuO7HGZnjVCr6celjfKDQn74khBzzURLkb9MiVRvUEW/89SgVfs
        1iM3OfROIV09NTcCAwEAAaNTMFEwHQYDVR0OBBYEFIM+pdrRj3ib8ownp7g64lel
        0NnoMB8GA1UdIwQYMBaAFIM+pdrRj3ib8ownp7g64lel0NnoMA8GA1UdEwEB/wQF
        MAMBAf8wDQYJKoZIhvcNAQELBQADgYEAbHeBg0+G2ZcbBSUBBy2+ZIVJYSNKK4tO
        EHTuH+ysjoSFfoZwOGWolptVuJB4BqQpwe9wh7LyJrYQ2CxMRoaPihW0a+jWsirg
        +ycKXNlLa4xkC8tG0ZI5y+AeqiwyH33vPL1brD7oQ2m8dH5odD4mnrtOyj5YSbQv
        6Lrkk3DfAgg=
        -----END CERTIFICATE-----
        """

    /// The same key as a SubjectPublicKeyInfo PEM (`openssl pkey -pubout`).
    static let weakPublicKeyPEM = """
        -----BEGIN PUBLIC KEY-----
        MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQC/Qwzpyh7aTQx35sakEn2bYAZR
        sDEns1QqblMZIhXkSU8kA1fk1pw5Mo6Uwk92vi+QSa7kmfmTxMtkh0vxkIsAaDeZ
        7O5spqCjonqNeRweO47scZmeNUKvpx6WN8oNCfviSEHPNREuRv0yJVG9QRb/z1KB
        V+zWIzc59E4hXT01NwIDAQAB
        -----END PUBLIC KEY-----
        """
}
