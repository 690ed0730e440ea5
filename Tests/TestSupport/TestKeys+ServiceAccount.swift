import FirebaseAdmin
import Foundation
import JSON

/// A service-account key file for tests, matching `TestKeys.service` and the fake token endpoint.
public enum TestServiceAccount {
    /// The account's email.
    public static let clientEmail = "locify-admin@locify-test.iam.gserviceaccount.com"
    /// The token endpoint the fake serves.
    public static let tokenURI = "https://oauth2.googleapis.com/token"

    /// The parsed account; `pkcs1` picks the `BEGIN RSA PRIVATE KEY` form of the same key.
    /// Pass the fake's socket URL as `tokenURI` when serving `FakeGoogle` over real HTTP (the fake
    /// must then be created with the same account, since the assertion's `aud` is the token URI).
    public static func account(
        pkcs1: Bool = false, projectId: String = "locify-test", tokenURI: String = TestServiceAccount.tokenURI
    ) -> ServiceAccount {
        ServiceAccount(
            projectId: projectId, privateKey: pkcs1 ? TestKeys.servicePKCS1PEM : TestKeys.service.privateKeyPEM,
            privateKeyId: TestKeys.service.kid, clientEmail: clientEmail, tokenURI: tokenURI)
    }

    /// The key file's JSON text, as Google would issue it (the PEM's newlines as `\n` escapes).
    public static func json(
        pkcs1: Bool = false, projectId: String = "locify-test", tokenURI: String = TestServiceAccount.tokenURI
    ) -> [UInt8] {
        let account = account(pkcs1: pkcs1, projectId: projectId, tokenURI: tokenURI)
        return JSONWriter.encode([
            "type": "service_account", "project_id": .string(account.projectId),
            "private_key_id": .string(account.privateKeyId), "private_key": .string(account.privateKey),
            "client_email": .string(account.clientEmail), "client_id": "1234567890",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": .string(account.tokenURI),
        ])
    }

    /// Writes the key file into the test scratch folder and returns its path.
    public static func writeFile(pkcs1: Bool = false, tokenURI: String = TestServiceAccount.tokenURI) throws -> String {
        let file = TestScratch.uniquePath("service-account.json")
        try Data(json(pkcs1: pkcs1, tokenURI: tokenURI)).write(to: file)
        return file.path
    }
}
