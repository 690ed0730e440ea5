internal import CLibSSL

/// The OpenSSL client settings every HTTPS request shares (one `SSL_CTX`): TLS 1.2 or later, the
/// peer's certificate chain verified against the trusted CAs (the system store, which honours
/// `SSL_CERT_FILE`/`SSL_CERT_DIR`, or one CA file). Owns the `SSL_CTX` and frees it in `deinit`.
final class TLSClientContext: Sendable {
    // safe because the SSL_CTX is configured in init and only read afterwards (SSL_new), which
    // OpenSSL allows from many threads at once.
    nonisolated(unsafe) let context: OpaquePointer

    /// The context trusting the system's CA store, created on first use.
    static let system: Result<TLSClientContext, TransportError> = make(trustedCertificatesFile: nil)

    /// A context trusting the CAs of `trustedCertificatesFile` (PEM) only, or the system store when nil.
    static func make(trustedCertificatesFile: String?) -> Result<TLSClientContext, TransportError> {
        do throws(TransportError) {
            return .success(try TLSClientContext(trustedCertificatesFile: trustedCertificatesFile))
        } catch {
            return .failure(error)
        }
    }

    private init(trustedCertificatesFile: String?) throws(TransportError) {
        guard let method = TLS_client_method(), let context = SSL_CTX_new(method) else {
            throw TLSStream.error("cannot create the TLS context")
        }
        guard locify_SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION) == 1 else {
            SSL_CTX_free(context)
            throw TLSStream.error("cannot require TLS 1.2")
        }
        let loaded =
            if let trustedCertificatesFile {
                SSL_CTX_load_verify_locations(context, trustedCertificatesFile, nil)
            } else {
                SSL_CTX_set_default_verify_paths(context)
            }
        guard loaded == 1 else {
            SSL_CTX_free(context)
            throw TLSStream.error("cannot load the trusted certificates")
        }
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        self.context = context
    }

    deinit {
        SSL_CTX_free(context)
    }
}

/// TLS over a `TransportSocket`: OpenSSL works on two memory BIOs and this class moves their
/// bytes through the socket, so every wait is the socket's (bounded by the deadline, `send` with
/// `MSG_NOSIGNAL`). Owns its `SSL` (which owns the BIOs) and frees it in `deinit`.
final class TLSStream: TransportStream {
    private let socket: TransportSocket
    private let ssl: OpaquePointer
    /// Bytes received from the socket, for OpenSSL to read; owned by `ssl`.
    private let input: OpaquePointer
    /// Bytes OpenSSL wrote, to send on the socket; owned by `ssl`.
    private let output: OpaquePointer
    private var socketEnded = false

    private init(socket: TransportSocket, ssl: OpaquePointer, input: OpaquePointer, output: OpaquePointer) {
        self.socket = socket
        self.ssl = ssl
        self.input = input
        self.output = output
    }

    deinit {
        SSL_free(ssl)
    }

    /// Runs the TLS handshake with `host` over `socket`: SNI (for names, not addresses), the
    /// certificate chain and the host name (or IP address) checked.
    static func open(socket: TransportSocket, context: TLSClientContext, host: String, hostIsIPAddress: Bool) throws(TransportError) -> TLSStream {
        guard let ssl = SSL_new(context.context) else { throw error("cannot create the TLS connection") }
        guard let input = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw error("cannot create a memory BIO")
        }
        guard let output = BIO_new(BIO_s_mem()) else {
            BIO_free(input)
            SSL_free(ssl)
            throw error("cannot create a memory BIO")
        }
        SSL_set_bio(ssl, input, output)
        // Owned from here: `ssl` (and with it both BIOs) is freed by deinit.
        let stream = TLSStream(socket: socket, ssl: ssl, input: input, output: output)
        let named: Bool
        if hostIsIPAddress {
            named = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1
        } else {
            named = locify_SSL_set_tlsext_host_name(ssl, host) == 1 && SSL_set1_host(ssl, host) == 1
        }
        guard named else { throw error("cannot set the expected host name") }
        SSL_set_connect_state(ssl)
        do {
            _ = try stream.perform { SSL_connect($0) }
        } catch {
            if error.isTimeout { throw error }
            let verification = SSL_get_verify_result(ssl)
            if verification != Int(X509_V_OK) {
                throw TransportError("TLS handshake failed: certificate verify failed: \(String(cString: X509_verify_cert_error_string(verification)))")
            }
            throw TransportError("TLS handshake failed: \(error.message)")
        }
        return stream
    }

    func write(_ bytes: [UInt8]) throws(TransportError) {
        var offset = 0
        while offset < bytes.count {
            let written = try perform { ssl in
                bytes.withUnsafeBytes { raw in SSL_write(ssl, raw.baseAddress.map { $0 + offset }, Int32(clamping: raw.count - offset)) }
            }
            guard written > 0 else { throw TransportError("TLS connection closed while sending") }
            offset += Int(written)
        }
    }

    func read(into buffer: inout [UInt8]) throws(TransportError) -> Bool {
        var chunk = [UInt8](repeating: 0, count: TransportSocket.readChunk)
        let count = try perform { ssl in
            chunk.withUnsafeMutableBytes { raw in SSL_read(ssl, raw.baseAddress, Int32(raw.count)) }
        }
        guard count > 0 else { return false }
        buffer.append(contentsOf: chunk[0..<Int(count)])
        return true
    }

    /// Calls `operation` until it completes, feeding OpenSSL the socket's bytes when it wants to
    /// read and sending what it wrote. Returns its positive result, or 0 when the peer closed
    /// the TLS session cleanly (close_notify); an end of the socket without one is an error.
    private func perform(_ operation: (OpaquePointer) -> Int32) throws(TransportError) -> Int32 {
        while true {
            ERR_clear_error()
            let result = operation(ssl)
            try flush()
            if result > 0 { return result }
            switch SSL_get_error(ssl, result) {
            case SSL_ERROR_WANT_READ:
                guard !socketEnded else { throw TransportError("TLS connection closed early") }
                var received: [UInt8] = []
                if try socket.read(into: &received) {
                    let stored = received.withUnsafeBytes { BIO_write(input, $0.baseAddress, Int32($0.count)) }
                    guard stored == Int32(received.count) else { throw Self.error("cannot buffer received bytes") }
                } else {
                    socketEnded = true
                    locify_BIO_set_mem_eof_return(input, 0)
                }
            case SSL_ERROR_WANT_WRITE:
                continue
            case SSL_ERROR_ZERO_RETURN:
                return 0
            default:
                throw Self.error("TLS error")
            }
        }
    }

    /// Sends on the socket whatever OpenSSL has written.
    private func flush() throws(TransportError) {
        var pending = BIO_ctrl_pending(output)
        while pending > 0 {
            var bytes = [UInt8](repeating: 0, count: min(Int(pending), TransportSocket.readChunk))
            let count = bytes.withUnsafeMutableBytes { BIO_read(output, $0.baseAddress, Int32($0.count)) }
            guard count > 0 else { throw Self.error("cannot take bytes to send") }
            try socket.write(Array(bytes[0..<Int(count)]))
            pending = BIO_ctrl_pending(output)
        }
    }

    /// A `TransportError` with `what` and OpenSSL's first queued error, clearing the queue.
    static func error(_ what: String) -> TransportError {
        let code = ERR_get_error()
        ERR_clear_error()
        guard code != 0 else { return TransportError(what) }
        var text = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &text, text.count)
        return TransportError("\(what): \(String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))")
    }
}
