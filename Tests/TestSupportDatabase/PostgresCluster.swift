import Foundation
import Synchronization
import TestSupport

/// A private PostgreSQL cluster that a test starts, stops and starts again (e.g. to check that
/// the pool survives a database restart). Uses the binaries in `LOCIFY_PG_BIN` (set by
/// `scripts/test`) or the newest `/usr/lib/postgresql/*/bin`; as root, runs them as `postgres`.
public final class PostgresCluster: Sendable {
    /// How `stop` shuts the server down (`pg_ctl -m`).
    public enum StopMode: String, Sendable {
        /// Waits for clients to disconnect.
        case smart
        /// Disconnects clients, then shuts down cleanly.
        case fast
        /// Kills the server processes at once (crash recovery on the next start).
        case immediate
    }

    /// The cluster's folder (data directory, socket, log), removed by `remove()`.
    public let directory: String
    /// The TCP port on 127.0.0.1, the same across restarts.
    public let port: Int
    private let binaries: String

    /// The connection string of the cluster's `postgres` database as user `postgres`.
    public var connectionString: String {
        "host=127.0.0.1 port=\(port) user=postgres dbname=postgres"
    }

    private init(directory: String, port: Int, binaries: String) {
        self.directory = directory
        self.port = port
        self.binaries = binaries
    }

    /// Creates a cluster in a new temporary folder and starts it.
    public static func start() throws -> PostgresCluster {
        let binaries = try binariesDirectory()
        let directory = (NSTemporaryDirectory() as NSString)
            .appendingPathComponent("locify-cluster-" + UUID().uuidString.prefix(8).lowercased())
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        if getuid() == 0 {
            guard let account = getpwnam("postgres") else {
                throw TestDatabaseError("running as root needs a postgres user to run PostgreSQL (install the postgresql package)")
            }
            guard chown(directory, account.pointee.pw_uid, account.pointee.pw_gid) == 0 else {
                throw TestDatabaseError("chown \(directory) failed: errno \(errno)")
            }
        }
        let cluster = PostgresCluster(directory: directory, port: try freePort(), binaries: binaries)
        do {
            try cluster.run("initdb", ["-D", cluster.dataDirectory, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C.UTF-8"])
            let settings = """

                listen_addresses = '127.0.0.1'
                unix_socket_directories = '\(directory)'
                max_connections = 50
                shared_buffers = 16MB
                fsync = off
                synchronous_commit = off
                full_page_writes = off

                """
            let configFile = FileHandle(forWritingAtPath: cluster.dataDirectory + "/postgresql.conf")
            guard let configFile else {
                throw TestDatabaseError("cannot open postgresql.conf in \(cluster.dataDirectory)")
            }
            defer { try? configFile.close() }
            try configFile.seekToEnd()
            try configFile.write(contentsOf: Data(settings.utf8))
            try cluster.startServer()
        } catch {
            cluster.remove()
            throw error
        }
        return cluster
    }

    /// Starts the stopped server again on the same port and waits until it accepts connections.
    public func startServer() throws {
        try run("pg_ctl", ["-D", dataDirectory, "-l", directory + "/postgres.log", "-w", "-t", "60", "-o", "-p \(port)", "start"])
    }

    /// Stops the server and waits until it is down.
    public func stop(_ mode: StopMode = .fast) throws {
        try run("pg_ctl", ["-D", dataDirectory, "-m", mode.rawValue, "-w", "-t", "60", "stop"])
    }

    /// Stops the server if it runs and deletes the folder.
    public func remove() {
        if FileManager.default.fileExists(atPath: dataDirectory + "/postmaster.pid") {
            try? stop(.immediate)
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    private var dataDirectory: String { directory + "/data" }

    /// Runs a PostgreSQL binary (as `postgres` when root) and waits for it; its output goes to a
    /// log file in the cluster folder. Uses posix_spawn and waitpid directly: Foundation's
    /// `Process` may never notice the exit of `pg_ctl start` while the server it launched runs on.
    private func run(_ program: String, _ arguments: [String]) throws {
        let executable = binaries + "/" + program
        let command = getuid() == 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--", executable] + arguments : [executable] + arguments
        let logPath = directory + "/\(program).out"
        let status = try waitForExit(try spawnProcess(command, logPath: logPath))
        guard status == 0 else {
            let output = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            throw TestDatabaseError("\(command.joined(separator: " ")) failed (status \(status)): \(output)")
        }
    }

    private static func binariesDirectory() throws -> String {
        let fileManager = FileManager.default
        if let configured = ProcessInfo.processInfo.environment["LOCIFY_PG_BIN"], !configured.isEmpty,
            fileManager.isExecutableFile(atPath: configured + "/initdb")
        {
            return configured
        }
        let root = "/usr/lib/postgresql"
        let versions = ((try? fileManager.contentsOfDirectory(atPath: root)) ?? [])
            .compactMap(Int.init)
            .sorted(by: >)
        for version in versions where fileManager.isExecutableFile(atPath: "\(root)/\(version)/bin/initdb") {
            return "\(root)/\(version)/bin"
        }
        throw TestDatabaseError("no PostgreSQL binaries found: set LOCIFY_PG_BIN or run scripts/test")
    }

    /// A TCP port that was free a moment ago (bound to port 0, read back, released).
    private static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw TestDatabaseError("socket failed: errno \(errno)") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else { throw TestDatabaseError("bind failed: errno \(errno)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getsockname(descriptor, $0, &length)
            }
        }
        guard named == 0 else { throw TestDatabaseError("getsockname failed: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
