import Dispatch
import FoundationEssentials
import Glibc
import Logging
import Primitives
import Synchronization

/// The HTTP/1.1 server: an acceptor thread, `ioThreads` epoll loops and a pool of
/// `workerThreads` handler threads around an `HTTPResponder`.
///
/// Call `start()` once, then `shutdown(gracePeriod:)` once done (from any thread, including a
/// signal-handling Dispatch source); `waitUntilStopped()` blocks until the shutdown is over.
public final class HTTPServer: Sendable {
    private struct Runtime: Sendable {
        let context: ServerContext
        let acceptor: Acceptor
        let loops: [EventLoop]
        let pool: WorkerPool
        let acceptorDone: DispatchGroup
        let loopsDone: DispatchGroup
    }

    private enum Lifecycle: Sendable {
        case idle
        case running(Runtime)
        case stopping
        case stopped
    }

    private let configuration: HTTPServerConfiguration
    private let responder: any HTTPResponder
    private let logger: Logger
    private let counters = ServerCounters()
    private let lifecycle = Mutex(Lifecycle.idle)
    private let boundPort = Atomic<Int>(0)
    /// Entered by `start`, left when `shutdown` is over.
    private let running = DispatchGroup()

    /// A server for `responder`; nothing happens until `start()`.
    public init(configuration: HTTPServerConfiguration, responder: any HTTPResponder, logger: Logger) {
        self.configuration = configuration
        self.responder = responder
        self.logger = logger
    }

    /// Binds, listens and starts the threads. Throws `HTTPServerError` (naming the failing system
    /// call and its errno) when the address cannot be bound, or when called twice.
    public func start() throws {
        try validate(configuration)
        guard lifecycle.withLock({ if case .idle = $0 { return true } else { return false } }) else {
            throw HTTPServerError.alreadyStarted
        }
        try Self.raiseOpenFileLimit(for: configuration)
        let listenFD = try SocketIO.makeListener(
            host: configuration.host, port: configuration.port, backlog: configuration.backlog)
        let runtime: Runtime
        do {
            boundPort.store(try SocketIO.localPort(of: listenFD), ordering: .releasing)
            let wakeFD = try Epoll.makeEventFD()
            let context = ServerContext(
                configuration: configuration, responder: responder, logger: logger, counters: counters,
                acceptorWakeFD: wakeFD)
            let pool = WorkerPool(context: context, threads: configuration.workerThreads)
            var loops: [EventLoop] = []
            for index in 0..<configuration.ioThreads {
                loops.append(try EventLoop(index: index, context: context, pool: pool))
            }
            runtime = Runtime(
                context: context, acceptor: Acceptor(listenFD: listenFD, context: context, loops: loops),
                loops: loops, pool: pool, acceptorDone: DispatchGroup(), loopsDone: DispatchGroup())
        } catch {
            Glibc.close(listenFD)
            throw error
        }
        let started = lifecycle.withLock { state -> Bool in
            guard case .idle = state else { return false }
            state = .running(runtime)
            return true
        }
        guard started else {
            Glibc.close(listenFD)
            throw HTTPServerError.alreadyStarted
        }
        running.enter()
        runtime.pool.start()
        for (index, loop) in runtime.loops.enumerated() {
            runtime.loopsDone.enter()
            let done = runtime.loopsDone
            DedicatedThread.startOrStop(name: "http-io-\(index)", stackSize: 1 << 20) {
                loop.run()
                done.leave()
            }
        }
        runtime.acceptorDone.enter()
        let acceptorDone = runtime.acceptorDone
        let acceptor = runtime.acceptor
        DedicatedThread.startOrStop(name: "http-acceptor", stackSize: 1 << 20) {
            acceptor.run()
            acceptorDone.leave()
        }
        logger.info(
            "HTTP server listening",
            metadata: ["host": "\(configuration.host)", "port": "\(localPort)"])
    }

    /// The port the server listens on (the actual one when configured with port 0); 0 before
    /// `start()`.
    public var localPort: Int { boundPort.load(ordering: .acquiring) }

    /// Open client connections, for metrics.
    public var openConnections: Int { counters.openConnections.load(ordering: .relaxed) }

    /// Requests waiting for a free worker thread, for metrics.
    public var workerQueueDepth: Int { max(0, counters.queuedRequests.load(ordering: .relaxed)) }

    /// Bytes of the body budget held now (`maxBufferedBodyBytes`), for metrics and tests.
    public var bufferedBodyBytes: Int { counters.bufferedBodyBytes.load(ordering: .relaxed) }

    /// Bytes of pipelined input and queued output connections hold now
    /// (`maxBufferedConnectionBytes`), for metrics and tests.
    public var bufferedConnectionBytes: Int { counters.bufferedConnectionBytes.load(ordering: .relaxed) }

    /// Connections closed as soon as accepted because their address had
    /// `maxConnectionsPerAddress` open, since the start; for metrics and tests.
    public var refusedConnections: Int { counters.refusedConnections.load(ordering: .relaxed) }

    /// Connections closed (idle or busy) to admit new ones at `maxConnections`, since the start; for
    /// metrics and tests.
    public var evictedConnections: Int { counters.evictedConnections.load(ordering: .relaxed) }

    /// The open files a server with `configuration` needs: its connections, the application's
    /// (`reservedFileDescriptors`), and its own (listener, eventfds, an epoll set per loop,
    /// standard streams).
    public static func fileDescriptorsNeeded(by configuration: HTTPServerConfiguration) -> Int {
        configuration.maxConnections + configuration.reservedFileDescriptors + 2 * configuration.ioThreads + 8
    }

    /// The process's hard open-file limit (`ulimit -Hn`), nil when unlimited: what
    /// `maxConnections` plus the server's other descriptors must fit in.
    public static func openFileHardLimit() throws(HTTPServerError) -> Int? {
        try OpenFileLimit.hardLimit()
    }

    /// The most connections a server with `configuration` can allow when the process may open
    /// `openFiles` files: what its other descriptors (`fileDescriptorsNeeded`) leave, maybe 0 or less.
    public static func maxConnections(fittingOpenFiles openFiles: Int, configuration: HTTPServerConfiguration) -> Int {
        openFiles - (fileDescriptorsNeeded(by: configuration) - configuration.maxConnections)
    }

    /// Raises the process's soft open-file limit (`RLIMIT_NOFILE`) to what a server with
    /// `configuration` needs; throws `openFileLimit` when the hard limit is lower. `start()` does
    /// it too; an application may call it first, to refuse to start before anything else.
    public static func raiseOpenFileLimit(for configuration: HTTPServerConfiguration) throws(HTTPServerError) {
        try OpenFileLimit.raise(to: fileDescriptorsNeeded(by: configuration))
    }

    /// Requests held without a thread for their `HTTPWait` (long-polls), for metrics and tests.
    public var waitingRequests: Int { max(0, counters.waitingRequests.load(ordering: .relaxed)) }

    /// Answers every request held for its `HTTPWait` now, with its `expire()` response and
    /// `Connection: close` (so its client reconnects, perhaps to another instance): the first step
    /// of a shutdown, so that no client waits out its whole wait on a server about to stop.
    /// Requests that begin waiting afterwards wait as usual until `shutdown` drains them.
    public func answerWaitingRequests() {
        let loops = lifecycle.withLock { state -> [EventLoop] in
            if case .running(let runtime) = state { return runtime.loops }
            return []
        }
        for loop in loops { loop.answerWaits() }
    }

    /// Stops gracefully: stops accepting (new connections are refused), closes idle keep-alive
    /// connections, lets in-flight requests finish (their responses carry `Connection: close`),
    /// answers the requests held for an `HTTPWait` at once (`expire()`), and after `gracePeriod`
    /// closes whatever remains. Returns when done. A handler still running past the grace period
    /// is not interrupted: its connection is shut down and its thread closes it when the handler
    /// returns. Safe to call more than once and from any thread.
    public func shutdown(gracePeriod: Duration) {
        let runtime = lifecycle.withLock { state -> Runtime? in
            switch state {
            case .running(let runtime):
                state = .stopping
                return runtime
            case .idle:
                state = .stopped
                return nil
            case .stopping, .stopped:
                return nil
            }
        }
        guard let runtime else {
            running.wait()
            return
        }
        let context = runtime.context
        context.isDraining.store(true, ordering: .releasing)
        runtime.acceptor.stop()
        runtime.acceptorDone.wait()
        let deadline = context.now() + gracePeriod.nanosecondsClamped
        for loop in runtime.loops {
            loop.beginDrain(deadline: deadline)
        }
        runtime.loopsDone.wait()
        runtime.pool.stop()
        lifecycle.withLock { $0 = .stopped }
        logger.info("HTTP server stopped")
        running.leave()
    }

    /// Blocks until `shutdown` has finished (returns at once if the server never started).
    public func waitUntilStopped() {
        running.wait()
    }

    private func validate(_ configuration: HTTPServerConfiguration) throws(HTTPServerError) {
        func require(_ condition: Bool, _ what: String) throws(HTTPServerError) {
            if !condition { throw .invalidConfiguration(what) }
        }
        try require(configuration.ioThreads >= 1, "ioThreads must be at least 1")
        try require(configuration.workerThreads >= 1, "workerThreads must be at least 1")
        try require(configuration.maxConnections >= 1, "maxConnections must be at least 1")
        try require(configuration.backlog >= 1, "backlog must be at least 1")
        try require(configuration.maxRequestLineBytes >= 16, "maxRequestLineBytes must be at least 16")
        try require(configuration.maxHeaderBytes >= 0, "maxHeaderBytes must not be negative")
        try require(configuration.maxHeaderCount >= 0, "maxHeaderCount must not be negative")
        try require(configuration.maxBodyBytes >= 0, "maxBodyBytes must not be negative")
        try require(configuration.maxBufferedInputBytes >= 1024, "maxBufferedInputBytes must be at least 1024")
        try require(
            configuration.maxBufferedBodyBytes >= configuration.maxBodyBytes,
            "maxBufferedBodyBytes must be at least maxBodyBytes")
        try require(
            configuration.maxBufferedBodyBytesPerClient >= configuration.maxBodyBytes,
            "maxBufferedBodyBytesPerClient must be at least maxBodyBytes")
        try require(configuration.minBodyBytesPerSecond >= 0, "minBodyBytesPerSecond must not be negative")
        try require(configuration.maxConnectionsPerAddress >= 0, "maxConnectionsPerAddress must not be negative")
        try require(configuration.reservedFileDescriptors >= 0, "reservedFileDescriptors must not be negative")
        try require(configuration.maxBufferedConnectionBytes >= 0, "maxBufferedConnectionBytes must not be negative")
        try require(configuration.maxQueuedRequests >= 1, "maxQueuedRequests must be at least 1")
        try require(configuration.overloadRetryAfterSeconds >= 0, "overloadRetryAfterSeconds must not be negative")
    }
}
