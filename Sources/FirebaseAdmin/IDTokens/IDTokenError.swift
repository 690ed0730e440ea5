/// Why an ID token was not accepted.
public enum IDTokenError: Error, Sendable, Equatable {
    /// The token is malformed, forged, expired or for another project (401). The reason is for
    /// logs only; never show it to the client.
    case invalid(String)
    /// Google's public keys could not be fetched and none are cached (503, not the token's fault).
    case keysUnavailable(String)
}
