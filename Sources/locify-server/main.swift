import Dispatch
import Foundation
import LocifyAPI
import Logging
import Postgres

// locify-server [serve]   run pending migrations, then serve until SIGTERM/SIGINT
// locify-server migrate   run pending migrations and exit

let arguments = Array(CommandLine.arguments.dropFirst())
let command = arguments.first ?? "serve"
guard arguments.count <= 1, ["serve", "migrate", "--help", "-h"].contains(command) else {
    FileHandle.standardError.write(Data("usage: locify-server [serve|migrate]\n".utf8))
    exit(2)
}
if command == "--help" || command == "-h" {
    print("usage: locify-server [serve|migrate]  (configuration from the environment; see README.md)")
    exit(0)
}

let configuration: Configuration
do {
    configuration = try Configuration(environment: ProcessInfo.processInfo.environment)
} catch {
    FileHandle.standardError.write(Data("locify-server: invalid configuration: \(error)\n".utf8))
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
signal(SIGPIPE, SIG_IGN)
signal(SIGTERM, SIG_IGN)
signal(SIGINT, SIG_IGN)

let application: Application
do {
    application = try buildApplication(configuration: configuration, logger: logger)
    try application.start()
} catch {
    logger.critical("cannot start", metadata: ["error": "\(String(reflecting: error))"])
    exit(1)
}

let signalQueue = DispatchQueue(label: "locify.signals")
var signalSources: [any DispatchSourceSignal] = []
for signalNumber in [SIGTERM, SIGINT] {
    let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: signalQueue)
    // Explicitly @Sendable: a closure written in top-level code is otherwise main-actor
    // isolated, and the runtime traps when the signal queue runs it (SIGTERM crashed, exit 132).
    source.setEventHandler { @Sendable [logger, application] in
        logger.info("received signal, draining", metadata: ["signal": "\(signalNumber)"])
        application.shutdown()
        exit(0)
    }
    source.resume()
    signalSources.append(source)
}
application.waitUntilStopped()
