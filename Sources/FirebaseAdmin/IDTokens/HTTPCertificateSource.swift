import HTTPClient
import JSON

/// Fetches `{kid: PEM certificate}` from Google's x509 endpoint (or `LOCIFY_ID_TOKEN_CERTS_URL`).
public struct HTTPCertificateSource: CertificateSource {
    /// Google's endpoint for the keys that sign Firebase ID tokens.
    public static let googleURL = "https://www.googleapis.com/robot/v1/metadata/x509/securetoken@system.gserviceaccount.com"

    /// The endpoint fetched.
    public var url: String
    /// The transport requests go through.
    public var transport: any HTTPTransport
    /// Per-request timeout in seconds (default 10 s).
    public var timeout: Double

    /// A source fetching from `url` through `transport`, giving up after `timeout` seconds.
    public init(url: String = HTTPCertificateSource.googleURL, transport: any HTTPTransport, timeout: Double = 10) {
        self.url = url
        self.transport = transport
        self.timeout = timeout
    }

    /// Fetches the current certificates and how long they may be cached (`Cache-Control: max-age`).
    public func fetchCertificates() throws -> CertificateSet {
        let response = try transport.send(TransportRequest(method: "GET", url: url, timeout: timeout))
        guard response.status == 200 else {
            throw TransportError("certificate endpoint answered HTTP \(response.status)")
        }
        let document: JSONValue
        do {
            document = try JSONParser.parse(response.body)
        } catch {
            throw TransportError("certificate endpoint answered invalid JSON: \(error.reason)")
        }
        guard let object = document.objectValue else { throw TransportError("certificate endpoint answered a non-object") }
        var certificates: [String: String] = [:]
        for member in object {
            guard let pem = member.value.stringValue else { continue }
            certificates[member.key] = pem
        }
        return CertificateSet(certificates: certificates, maxAge: CacheControl.maxAge(response.header("Cache-Control")))
    }
}
