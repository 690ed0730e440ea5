/// Google's ID-token signing certificates as last fetched.
public struct CertificateSet: Sendable, Equatable {
    /// PEM X.509 certificates by key id (`kid`).
    public var certificates: [String: String]
    /// The response's `Cache-Control: max-age` in seconds, nil when absent.
    public var maxAge: Double?

    /// Certificates by key id, with the response's max-age in seconds (nil when absent).
    public init(certificates: [String: String], maxAge: Double?) {
        self.certificates = certificates
        self.maxAge = maxAge
    }
}

/// Where the public keys for ID tokens come from (Google, or a test double).
public protocol CertificateSource: Sendable {
    /// Fetches the current certificates; blocking.
    func fetchCertificates() throws -> CertificateSet
}
