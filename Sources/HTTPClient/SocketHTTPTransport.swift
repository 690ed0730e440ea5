import Primitives

/// The production `HTTPTransport`: an HTTP/1.1 client of our own on a socket, with TLS through
/// libssl. It replaces URLSession, whose FoundationNetworking (libcurl and its TLS, Kerberos and
/// LDAP libraries) cost the server about 11 MB of memory for a handful of calls to Google.
///
/// One connection per request (`Connection: close`, no reuse: Google is called rarely), the
/// host's addresses raced as RFC 8305 says (`connectionAttemptDelay`), the whole exchange bounded
/// by the request's timeout, the response head limited to 64 KiB and the
/// body to 16 MiB.
public struct SocketHTTPTransport: HTTPTransport {
    /// Default per-request timeout in seconds (10 s): connect, TLS handshake, request and response.
    public var timeout: Double
    /// The CAs HTTPS servers are checked against: the system store (which honours `SSL_CERT_FILE`).
    private let tlsContext: @Sendable () -> Result<TLSClientContext, TransportError>
    /// How host names become addresses (within the request's deadline).
    var resolver = HostResolver()
    /// How long a connection attempt to one address has before the next address is tried beside
    /// it (RFC 8305's "Connection Attempt Delay"). Default 250 ms.
    public var connectionAttemptDelay: Duration = TransportSocket.defaultAttemptDelay
    /// The clock the request's deadline is measured on (`MonotonicClock.system` unless injected).
    public var clock: MonotonicClock = .system

    /// A transport trusting the system's CA store.
    public init(timeout: Double = 10) {
        self.timeout = timeout
        tlsContext = { TLSClientContext.system }
    }

    /// A transport trusting only the CA certificates in the PEM file `trustedCertificatesFile`
    /// (tests use it with a test CA).
    public init(timeout: Double = 10, trustedCertificatesFile: String) {
        self.timeout = timeout
        let context = TLSClientContext.make(trustedCertificatesFile: trustedCertificatesFile)
        tlsContext = { context }
    }

    /// Sends the request and blocks until its response, failure or timeout.
    public func send(_ request: TransportRequest) throws -> TransportResponse {
        let seconds = request.timeout ?? timeout
        guard seconds.isFinite, seconds > 0 else { throw TransportError("invalid timeout") }
        // At most a day, so the Duration cannot overflow.
        let deadline = clock.now() + .seconds(min(seconds, 86_400))
        let url = try TransportURL(request.url)
        let head = try Self.requestHead(request, url: url)
        let socket = try TransportSocket.connect(
            host: url.host, port: url.port, deadline: deadline, clock: clock, resolver: resolver, attemptDelay: connectionAttemptDelay)
        let stream: any TransportStream
        if url.isHTTPS {
            let context = try tlsContext().get()
            stream = try TLSStream.open(socket: socket, context: context, host: url.host, hostIsIPAddress: url.hostIsIPAddress)
        } else {
            stream = socket
        }
        try stream.write(head + request.body)
        var reader = HTTPResponseReader(stream: stream)
        return try reader.readResponse(method: request.method)
    }

    /// The header fields this transport writes itself; the request's own are dropped.
    private static let ownedHeaders: Set<String> = ["host", "content-length", "connection", "transfer-encoding"]

    /// The request line and header fields: `Host`, the request's fields in order, `Content-Length`
    /// when there is a body (or the method usually has one), `Connection: close`.
    static func requestHead(_ request: TransportRequest, url: TransportURL) throws(TransportError) -> [UInt8] {
        let isToken = { (text: String) in
            !text.isEmpty && text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != 0x3A && $0 != 0x22 && $0 != 0x28 && $0 != 0x29 }
        }
        guard isToken(request.method) else { throw TransportError("invalid method") }
        var head = "\(request.method) \(url.target) HTTP/1.1\r\nHost: \(url.hostHeader)\r\n"
        for (name, value) in request.headers where !ownedHeaders.contains(name.lowercased()) {
            // A CR or LF in a field would let a value inject fields or a second request.
            guard isToken(name), !value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }) else {
                throw TransportError("invalid header field \(name)")
            }
            head += "\(name): \(value)\r\n"
        }
        if !request.body.isEmpty || ["POST", "PUT", "PATCH"].contains(request.method) {
            head += "Content-Length: \(request.body.count)\r\n"
        }
        head += "Connection: close\r\n\r\n"
        return Array(head.utf8)
    }
}
