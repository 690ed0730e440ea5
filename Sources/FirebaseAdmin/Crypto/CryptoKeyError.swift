internal import CLibCrypto

/// A key or certificate could not be loaded, or a signature could not be produced.
public struct CryptoKeyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What failed, including OpenSSL's own reason when it gave one.
    public var message: String

    /// An error saying which key operation failed and why.
    public init(_ message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }

    /// Builds an error from `context` plus the first queued OpenSSL reason, then clears the queue.
    static func fromOpenSSL(_ context: String) -> CryptoKeyError {
        let code = ERR_get_error()
        var detail = ""
        if code != 0 {
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            detail = ": " + String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        ERR_clear_error()
        return CryptoKeyError(context + detail)
    }
}
