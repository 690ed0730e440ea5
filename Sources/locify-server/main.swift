import Dispatch
import FoundationEssentials
import Glibc
import LocifyAPI
import LocifyServer
import Logging
import Postgres
import Synchronization

// locify-server [serve]   run pending migrations, then serve until SIGTERM/SIGINT
// locify-server migrate   run pending migrations and exit
// locify-server healthcheck   exit 0 when the server on this host's $PORT answers /health/ready with 200, else 1

let arguments = Array(CommandLine.arguments.dropFirst())
let command = arguments.first ?? "serve"
guard arguments.count <= 1, ["serve", "migrate", "healthcheck", "--help", "-h"].contains(command) else {
    writeToStandardError("usage: locify-server [serve|migrate|healthcheck]\n")
    exit(2)
}
if command == "--help" || command == "-h" {
    print("usage: locify-server [serve|migrate|healthcheck]  (configuration from the environment; see README.md)")
    exit(0)
}
// Before the configuration is read: the probe needs only PORT (and HOST), not the database URL.
if command == "healthcheck" {
    exit(runHealthCheck())
}

let configuration: Configuration
do {
    configuration = try Configuration(environment: ProcessInfo.processInfo.environment)
} catch {
    writeToStandardError("locify-server: invalid configuration: \(error)\n")
    exit(1)
}

let level = Logger.Level(rawValue: configuration.logLevel) ?? .info
LoggingSystem.bootstrap { label in JSONLogHandler(label: label, level: level) }
let logger = Logger(label: "locify")

if command == "migrate" {
    do {
        let database = try PostgresConfiguration(connectionString: configuration.databaseURL)
        let pool = ConnectionPool(configuration: database, size: 1, logger: logger)
        let applied = try MigrationRunner(directory: configuration.migrationsDirectory, logger: logger).run(using: pool)
        pool.close()
        logger.info("migrations up to date", metadata: ["applied": "\(applied.joined(separator: ", "))"])
        exit(0)
    } catch {
        logger.critical("migration failed", metadata: ["error": "\(String(reflecting: error))"])
        exit(1)
    }
}

// Signals are handled on a Dispatch source, not by the default action, so shutdown is graceful.
// The handlers go in before the application is built: building waits up to ~30 s for the database
// (migrations are retried), and a stop during that wait must end the process too.
signal(SIGPIPE, SIG_IGN)
signal(SIGTERM, SIG_IGN)
signal(SIGINT, SIG_IGN)
let lifecycle = ServerLifecycle()
let signalSources = installSignalHandlers(lifecycle, logger: logger)

do {
    try lifecycle.start { try buildApplication(configuration: configuration, logger: logger) }
} catch {
    logger.critical("cannot start", metadata: ["error": "\(String(reflecting: error))"])
    exit(1)
}
let memoryTrimming = startMemoryTrimming(every: configuration.memoryTrimIntervalSeconds)
lifecycle.waitUntilStopped()
memoryTrimming?.cancel()

/// The process's application once it is serving, shared with the signal handlers: a signal while
/// the application is still being built ends the process at once; one while it serves drains it.
final class ServerLifecycle: Sendable {
    private let application = Mutex<Application?>(nil)

    /// Builds the application (no lock held: a signal meanwhile ends the process at once), then
    /// starts it under the lock, so a signal arriving during `start()` is handled after it
    /// returned, never against a half-started server.
    func start(_ build: () throws -> Application) throws {
        let built = try build()
        try application.withLock { running in
            try built.start()
            running = built
        }
    }

    /// Blocks until the application stopped serving.
    func waitUntilStopped() {
        application.withLock { $0 }?.waitUntilStopped()
    }

    /// Stops because of `signalNumber`: drains and exits 0 when serving, else exits 128 + the
    /// signal number (the shell's convention for a process ended by a signal) without waiting.
    func stop(signalNumber: Int32, logger: Logger) -> Never {
        let serving = application.withLock { $0 }
        guard let serving else {
            logger.notice("received signal before the server started; exiting", metadata: ["signal": "\(signalNumber)"])
            exit(128 + signalNumber)
        }
        logger.info("received signal, draining", metadata: ["signal": "\(signalNumber)"])
        serving.shutdown()
        exit(0)
    }
}

/// Calls `lifecycle.stop` on SIGTERM or SIGINT, from handlers on their own queue. A function
/// rather than top-level code: top-level code is main-actor isolated in Swift 6, and a handler
/// closure formed there would trap its isolation check when the signal queue runs it.
func installSignalHandlers(_ lifecycle: ServerLifecycle, logger: Logger) -> [any DispatchSourceSignal] {
    let signalQueue = DispatchQueue(label: "locify.signals")
    var sources: [any DispatchSourceSignal] = []
    for signalNumber in [SIGTERM, SIGINT] {
        let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: signalQueue)
        source.setEventHandler { lifecycle.stop(signalNumber: signalNumber, logger: logger) }
        source.resume()
        sources.append(source)
    }
    return sources
}
