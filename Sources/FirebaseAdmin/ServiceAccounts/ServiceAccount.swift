import FoundationEssentials
import JSON

/// The fields of a Google service-account key file (`GOOGLE_APPLICATION_CREDENTIALS`) that the
/// server uses to obtain access tokens.
public struct ServiceAccount: Sendable, Equatable {
    /// Always `service_account` for files this type accepts.
    public var type: String
    /// The Google Cloud project the account belongs to.
    public var projectId: String
    /// The PEM private key (PKCS#8 or PKCS#1).
    public var privateKey: String
    /// The key's id, sent as the assertion's `kid`.
    public var privateKeyId: String
    /// The account's email, the assertion's `iss`.
    public var clientEmail: String
    /// The OAuth token endpoint (default `https://oauth2.googleapis.com/token`).
    public var tokenURI: String

    /// Google's OAuth 2.0 token endpoint.
    public static let defaultTokenURI = "https://oauth2.googleapis.com/token"

    /// A service account from its key file's fields.
    public init(
        type: String = "service_account", projectId: String, privateKey: String, privateKeyId: String,
        clientEmail: String, tokenURI: String = ServiceAccount.defaultTokenURI
    ) {
        self.type = type
        self.projectId = projectId
        self.privateKey = privateKey
        self.privateKeyId = privateKeyId
        self.clientEmail = clientEmail
        self.tokenURI = tokenURI
    }

    /// Parses the JSON of a key file.
    public init(json: [UInt8]) throws(ServiceAccountError) {
        let document: JSONValue
        do {
            document = try JSONParser.parse(json)
        } catch {
            throw ServiceAccountError("credentials file is not valid JSON: \(error.reason)")
        }
        guard let object = document.objectValue else { throw ServiceAccountError("credentials file is not a JSON object") }
        func field(_ name: String) throws(ServiceAccountError) -> String {
            guard let value = object[name]?.stringValue, !value.isEmpty else {
                throw ServiceAccountError("credentials file has no \(name)")
            }
            return value
        }
        let type = try field("type")
        guard type == "service_account" else {
            throw ServiceAccountError("credentials file type is \(type), expected service_account")
        }
        let tokenURI = object["token_uri"]?.stringValue ?? Self.defaultTokenURI
        // The signed assertion sent there is worth an hour of admin access.
        guard GoogleEndpoint.isAcceptable(tokenURI) else {
            throw ServiceAccountError(
                "credentials file token_uri must be an https URL (plain http only to a loopback host), got \"\(tokenURI)\"")
        }
        self.init(
            type: type, projectId: try field("project_id"), privateKey: try field("private_key"),
            privateKeyId: try field("private_key_id"), clientEmail: try field("client_email"), tokenURI: tokenURI)
    }

    /// Reads and parses the key file at `path`.
    public static func load(path: String) throws(ServiceAccountError) -> ServiceAccount {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ServiceAccountError("cannot read credentials file \(path)")
        }
        return try ServiceAccount(json: Array(data))
    }
}

/// A service-account key file is missing, unreadable or incomplete.
public struct ServiceAccountError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong with the file.
    public var message: String

    /// An error saying what is wrong with the key file.
    public init(_ message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }
}
