import Glibc
import Primitives

/// Everything the server can be tuned with: address, limits, timeouts, threads.
public struct HTTPServerConfiguration: Sendable {
    /// The address to listen on (numeric IPv4/IPv6 or a host name). Default `127.0.0.1`.
    public var host: String
    /// The TCP port. Default `8080`; `0` picks an ephemeral port (see `HTTPServer.localPort`).
    public var port: Int
    /// The listen backlog, in connections. Default `1024`.
    public var backlog: Int = 1024

    /// Longest request line accepted, in bytes, CRLF excluded. Longer: 414. Default `8192`.
    public var maxRequestLineBytes: Int = 8192
    /// Largest header section, in bytes: the field lines without their CRLFs, request line
    /// excluded; trailers count against the same budget. Larger: 431. Default `16384`.
    public var maxHeaderBytes: Int = 16384
    /// Most header fields per request (trailers included). More: 431. Default `100`.
    public var maxHeaderCount: Int = 100
    /// Largest request body, in bytes, inclusive; checked against `Content-Length` before reading
    /// and against the running total of chunks. Larger: 413. Default `2_097_152` (2 MiB).
    public var maxBodyBytes: Int = 2_097_152
    /// Server-wide budget for request bodies held in memory: bodies being received and received
    /// requests waiting for or running in a handler. A body holds what has arrived of it (never
    /// what it announces) until its response is queued, charged to its holder (the owner the
    /// application names when it admits the body, `HTTPResponder.admitBody`, or else the client
    /// address). When the budget is full, a holder holding less than an equal part of it (the
    /// budget over the number of holders) still gets room, and the I/O threads then cut (503 with
    /// `Retry-After`) the slowest bodies of the holders holding more than their part until the
    /// budget is kept again, at their next timer tick; a body that cannot get room is answered 503
    /// with `Retry-After` and its connection closed (before it is read, never after
    /// `100 Continue`, when not a byte of it fits). A handful of clients trickling bodies
    /// therefore holds the budget only until others need it. Request lines and header sections
    /// are not counted: they are bounded per connection by the limits above. At least
    /// `maxBodyBytes`. Default `268_435_456` (256 MiB).
    public var maxBufferedBodyBytes: Int = 268_435_456
    /// Most of the body budget one client holds at once: the owner the application names when it
    /// admits a body (the authenticated user), or else the client address (`ClientAddress`). A
    /// body past it is answered 429 with `Retry-After` (before it is read when the client already
    /// holds it all) and the connection closed. At least `maxBodyBytes`. Default `16_777_216`
    /// (16 MiB).
    public var maxBufferedBodyBytesPerClient: Int = 16_777_216
    /// The slowest a body may arrive while the body budget is under pressure (more than half of
    /// it held): a body still arriving then, once `bodyRateGracePeriod` has passed since it was
    /// admitted, must have averaged this many bytes per second since its admission, or it is
    /// answered 408 and what it holds freed, the slowest first. On a server not under pressure an
    /// honest slow body (a phone on a poor uplink) is only bound by `bodyReadTimeout`. 0 turns the
    /// check off. Default `1024` (1 KiB/s).
    public var minBodyBytesPerSecond: Int = 1024
    /// How long a body may arrive at any pace before `minBodyBytesPerSecond` applies. Default 10 s.
    public var bodyRateGracePeriod: Duration = .seconds(10)
    /// Most requests waiting for a worker thread; a request arriving when that many wait is
    /// answered 503 with `Retry-After` and its connection closed. Default `4096`.
    public var maxQueuedRequests: Int = 4096
    /// The `Retry-After` seconds of the server's own 503 answers (body budget or worker queue
    /// full). Default `1`.
    public var overloadRetryAfterSeconds: Int = 1
    /// Most chunk-extension bytes per request (they are ignored, but bounded). Default `4096`.
    public var maxChunkExtensionBytes: Int = 4096
    /// Most empty lines ignored before a request line (RFC 9112 2.2). Default `8`.
    public var maxLeadingEmptyLines: Int = 8

    /// Time allowed to receive a request's header section, from its first byte (empty lines
    /// before the request line count): then 408 and close. A new connection's first request head
    /// must be complete within this time of the connect, and a connection silent that long is
    /// closed quietly. Default 10 s.
    public var headerReadTimeout: Duration = .seconds(10)
    /// Longest pause while receiving a body: then 408 and close. Default 30 s.
    public var bodyReadTimeout: Duration = .seconds(30)
    /// How long an idle keep-alive connection is kept before it is closed silently. Default 60 s.
    public var keepAliveIdleTimeout: Duration = .seconds(60)
    /// Longest time a pending response may make no progress before the connection is closed.
    /// Default 30 s.
    public var writeTimeout: Duration = .seconds(30)
    /// After a response that closes the connection, how long unread input is drained so the
    /// client receives the response instead of a reset (lingering close). Default 2 s.
    public var lingeringCloseTimeout: Duration = .seconds(2)
    /// How often the I/O threads check deadlines. Default 250 ms.
    public var timerResolution: Duration = .milliseconds(250)
    /// The clock timeouts are measured with (the application's monotonic clock). Default:
    /// `CLOCK_MONOTONIC`.
    public var clock: MonotonicClock = .system
    /// The clock the `Date` header of responses reads (the application's wall clock). Default:
    /// `CLOCK_REALTIME`.
    public var wallClock: WallClock = .system

    /// Most open client connections. At the limit, while clients wait in the listen backlog,
    /// each I/O thread closes its longest-idle connections (waiting for a request's first byte)
    /// to admit them; when none is idle, new clients wait. Default `10_000`.
    public var maxConnections: Int = 10_000
    /// Most open connections from one client address (`ClientAddress`: IPv4 address or IPv6
    /// /64); further connections from it are closed as soon as they are accepted. 0 turns the
    /// limit off. Behind a proxy every client has the proxy's address: raise it there. Default
    /// `256`.
    public var maxConnectionsPerAddress: Int = 256
    /// Descriptors the application needs beside the client connections (database connections,
    /// outgoing calls, files). At start the server raises the soft open-file limit to
    /// `maxConnections` plus these plus its own, and refuses to start when the hard limit is
    /// lower. Default `64`.
    public var reservedFileDescriptors: Int = 64
    /// Number of epoll I/O threads. Default: the number of online cores.
    public var ioThreads: Int = HTTPServerConfiguration.onlineCoreCount
    /// Number of worker threads running `.worker` handlers. Default `4`.
    public var workerThreads: Int = 4
    /// Bytes read from a socket at once, which also bounds the unparsed input (pipelined requests)
    /// buffered per connection beyond the request being handled: the socket is not read again
    /// until that request has been answered. Default `65_536`.
    public var maxBufferedInputBytes: Int = 65_536
    /// Server-wide budget for the bytes connections hold outside bodies: pipelined input read
    /// ahead of its turn and responses queued for slow readers. Past it, connections parse no
    /// further pipelined request until their queued output is written, and read at most 4 KiB at
    /// a time, so the total exceeds it by at most one response and 4 KiB per connection.
    /// Default `67_108_864` (64 MiB).
    public var maxBufferedConnectionBytes: Int = 67_108_864

    /// A configuration with every default, listening on `host:port`.
    public init(host: String = "127.0.0.1", port: Int = 8080) {
        self.host = host
        self.port = port
    }

    /// The number of online cores (at least 1).
    public static var onlineCoreCount: Int {
        max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    }
}
